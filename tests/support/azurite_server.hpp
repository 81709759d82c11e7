#pragma once
// A real Azure Blob Storage service for integration tests: Azurite, pinned under
// third_party/azurite, seeded and inspected with the Azure SDK for Python.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream::testing {

/// Azurite's blob service on an ephemeral 127.0.0.1 port, from construction until destruction,
/// its blobs in memory.
///
/// Azurite serves the account devstoreaccount1 (and any of Options::more_accounts), and checks
/// Shared Key signatures and SAS tokens against its well-known key. Blob URLs are path-style:
/// blob_endpoint() + "/container/blob".
/// The seeding and inspection methods go through tests/support/azure_blob_tool.py, the Azure
/// SDK's client, so what a test checks does not depend on the store under test.
///
///     if (auto why = AzuriteServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
///     AzuriteServer azurite;
///     azurite.create_container("models");
///     azurite.put_blob("models", "llama/model.safetensors", model_file);
class AzuriteServer {
 public:
  /// How to run Azurite.
  struct Options {
    /// Serve https with a certificate of a fresh test CA (ca_file()) and accept OAuth bearer
    /// tokens (`--oauth basic`), which Azurite takes only over https. It checks a token's
    /// audience (e.g. https://storage.azure.com), issuer (https://sts.windows.net/TENANT/ and
    /// the like, not login.microsoftonline.com) and times, but not its signature.
    bool https = false;
    /// `--loose`: ignore headers and parameters Azurite does not implement instead of failing
    /// the request. Off, so that a request relying on one fails visibly.
    bool loose = false;
    /// Accounts to serve besides devstoreaccount1, with its key (AZURITE_ACCOUNTS), for tests
    /// of what tells two accounts' blobs of one container and name apart.
    std::vector<std::string> more_accounts{};
  };

  /// Whether a container's blobs can be read without credentials.
  enum class PublicAccess { none, blob, container };

  /// The account Azurite serves.
  static constexpr const char* account_name = "devstoreaccount1";
  /// Its key (base64), the emulators' published one.
  static constexpr const char* account_key =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

  /// Why Azurite cannot run here with `options` (no node, `npm ci` not run, no Azure SDK for
  /// Python, no openssl for https), or nullopt when it can.
  static std::optional<std::string> unavailable(const Options& options);

  /// Why plain http Azurite cannot run here, or nullopt when it can.
  static std::optional<std::string> unavailable() { return unavailable(Options{}); }

  /// Starts Azurite and returns once it accepts connections. Throws std::runtime_error quoting
  /// its output when it does not come up.
  explicit AzuriteServer(Options options);

  /// Starts Azurite serving plain http.
  AzuriteServer() : AzuriteServer(Options{}) {}

  /// Kills Azurite (its data is in memory: there is nothing to flush) and removes its files.
  ~AzuriteServer();

  AzuriteServer(const AzuriteServer&) = delete;
  AzuriteServer& operator=(const AzuriteServer&) = delete;

  /// "devstoreaccount1".
  std::string account() const { return account_name; }

  /// The account's key (base64).
  std::string key() const { return account_key; }

  /// The port Azurite listens on, on 127.0.0.1.
  std::uint16_t port() const { return port_; }

  /// "http://127.0.0.1:PORT/devstoreaccount1" (https with Options::https): the blob endpoint
  /// of `account`, path-style as the emulator's are.
  std::string blob_endpoint(const std::string& account = account_name) const;

  /// A connection string naming `account`, its key and blob_endpoint(), as the Azure tools take
  /// one.
  std::string connection_string(const std::string& account = account_name) const;

  /// The PEM CA file a client must trust with Options::https; empty otherwise.
  const std::filesystem::path& ca_file() const { return ca_file_; }

  /// Azurite's output, for diagnosing a failing test.
  std::string log() const;

  /// Creates the container `name` of `account`, readable anonymously as `access` says.
  void create_container(const std::string& name, PublicAccess access = PublicAccess::none,
                        const std::string& account = account_name) const;

  /// Uploads `file` as the block blob `name` of `account`'s `container`, replacing any.
  void put_blob(const std::string& container, const std::string& name,
                const std::filesystem::path& file,
                const std::string& account = account_name) const;

  /// Uploads `bytes` (the content, not a file name) as the block blob `name` of `account`'s
  /// `container`.
  void put_blob(const std::string& container, const std::string& name, const std::string& bytes,
                const std::string& account = account_name) const;

  /// Uploads every file under `directory` as a block blob named `prefix` followed by its path
  /// relative to `directory` (e.g. "llama/" + "model.safetensors"), in one run of the tool.
  void put_directory(const std::string& container, const std::string& prefix,
                     const std::filesystem::path& directory) const;

  /// Deletes the blob `name` of `container`; throws when there is none.
  void delete_blob(const std::string& container, const std::string& name) const;

  /// The lowercase hex SHA-256 of the blob's content, or nullopt when the blob does not exist:
  /// what a test compares with what it wrote or expects.
  std::optional<std::string> blob_sha256(const std::string& container,
                                         const std::string& name) const;

  /// The names of `container`'s blobs that start with `prefix`, in the service's (lexical)
  /// order.
  std::vector<std::string> list_blobs(const std::string& container,
                                      const std::string& prefix = "") const;

  /// An account SAS token (no leading '?') for the blob service, on service, container and
  /// object resources, with `permissions` in SAS letters ("r" read, "l" list, "w" write,
  /// "c" create, "a" add, "d" delete), valid from now for `lifetime`.
  std::string account_sas(const std::string& permissions,
                          std::chrono::minutes lifetime = std::chrono::minutes(60)) const;

  /// A service SAS token (no leading '?') for `container`, as account_sas().
  std::string container_sas(const std::string& container, const std::string& permissions,
                            std::chrono::minutes lifetime = std::chrono::minutes(60)) const;

 private:
  // Runs azure_blob_tool.py with `arguments` on `account` and returns its stdout; nullopt when
  // it exits with its "missing" code. Throws std::runtime_error quoting its stderr on any other
  // failure.
  std::optional<std::string> tool(const std::vector<std::string>& arguments,
                                  const std::string& account = account_name) const;

  Options options_;
  TempDir directory_;
  std::filesystem::path ca_file_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
  mutable std::atomic<unsigned> uploads_{0};  // Names put_blob's temporary files.
};

}  // namespace tensorstream::testing
