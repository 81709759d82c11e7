#include "support/azurite_server.hpp"

#include <stdexcept>

#include "support/certificates.hpp"
#include "support/files.hpp"
#include "support/process.hpp"

namespace tensorstream::testing {
namespace {

// Debian's interpreter, which python3-azure-storage is installed for.
constexpr const char* azure_python = "/usr/bin/python3";
const std::filesystem::path azurite_script = TENSORSTREAM_AZURITE_SCRIPT;
const std::filesystem::path azure_blob_tool_script = TENSORSTREAM_AZURE_BLOB_TOOL_SCRIPT;
// azure_blob_tool.py's exit code for a blob that does not exist.
constexpr int azure_blob_missing_exit_code = 3;

// Importing the SDK takes a third of a second: probed once per test program.
bool azure_sdk_installed() {
  static const bool installed =
      run_process({azure_python, "-c", "import azure.storage.blob"}).exit_code == 0;
  return installed;
}

std::string minutes_argument(std::chrono::minutes lifetime) {
  return std::to_string(lifetime.count());
}

}  // namespace

std::optional<std::string> AzuriteServer::unavailable(const Options& options) {
  if (!find_program("node")) return "node is not installed (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(azurite_script)) {
    return "Azurite is not installed at " + azurite_script.string() +
           " (scripts/setup.sh runs npm ci there)";
  }
  if (!azure_sdk_installed()) {
    return std::string(azure_python) +
           " cannot import azure.storage.blob (scripts/setup.sh installs python3-azure-storage)";
  }
  if (options.https && !Certificates::available()) return "openssl is not installed";
  return std::nullopt;
}

AzuriteServer::AzuriteServer(Options options) : options_(options) {
  const auto& dir = directory_.path();
  // Port 0: Azurite announces the port it got. Telemetry off: the tests have no network, and it
  // would report them. Path-style URLs whatever the host name, as blob_endpoint() gives. Any API
  // version is accepted, so that a newer SDK's requests are not refused.
  std::vector<std::string> argv{find_program("node")->string(),
                                azurite_script.string(),
                                "--blobHost",
                                "127.0.0.1",
                                "--blobPort",
                                "0",
                                "--inMemoryPersistence",
                                "--skipApiVersionCheck",
                                "--disableTelemetry",
                                "--disableProductStyleUrl",
                                "--silent"};
  if (options_.loose) argv.push_back("--loose");
  if (!options_.more_accounts.empty()) {
    // Naming accounts replaces the default one, which every test of the suite uses.
    std::string accounts = std::string("AZURITE_ACCOUNTS=") + account_name + ":" + account_key;
    for (const auto& account : options_.more_accounts) {
      accounts += ";" + account + ":" + account_key;
    }
    argv.insert(argv.begin(), {find_program("env")->string(), accounts});
  }
  if (options_.https) {
    std::filesystem::create_directory(dir / "tls");
    const auto certificates = Certificates::generate(dir / "tls");
    ca_file_ = certificates.ca;
    argv.insert(argv.end(), {"--cert", certificates.server_certificate.string(), "--key",
                             certificates.server_key.string(), "--oauth", "basic"});
  }
  const auto log_file = dir / "azurite.log";
  process_ = std::make_unique<ChildProcess>(argv, log_file);
  // Node takes a while to load Azurite on a busy machine; the line comes once it listens.
  port_ = wait_for_announced_port(*process_, log_file,
                                  std::string("successfully listens on ") +
                                      (options_.https ? "https" : "http") + "://127.0.0.1:",
                                  std::chrono::seconds(60));
}

AzuriteServer::~AzuriteServer() {
  if (process_) process_->stop(std::chrono::milliseconds(0));
}

std::string AzuriteServer::blob_endpoint(const std::string& account) const {
  return std::string(options_.https ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
         "/" + account;
}

std::string AzuriteServer::connection_string(const std::string& account) const {
  return std::string("DefaultEndpointsProtocol=") + (options_.https ? "https" : "http") +
         ";AccountName=" + account + ";AccountKey=" + account_key +
         ";BlobEndpoint=" + blob_endpoint(account) + ";";
}

std::string AzuriteServer::log() const { return read_text_file(directory_.path() / "azurite.log"); }

void AzuriteServer::create_container(const std::string& name, PublicAccess access,
                                     const std::string& account) const {
  std::vector<std::string> arguments{"create-container", name};
  if (access != PublicAccess::none) {
    arguments.insert(arguments.end(),
                     {"--public-access", access == PublicAccess::blob ? "blob" : "container"});
  }
  tool(arguments, account);
}

void AzuriteServer::put_blob(const std::string& container, const std::string& name,
                             const std::filesystem::path& file, const std::string& account) const {
  tool({"put", container, name, file.string()}, account);
}

void AzuriteServer::put_blob(const std::string& container, const std::string& name,
                             const std::string& bytes, const std::string& account) const {
  const auto file = directory_.path() / ("upload-" + std::to_string(uploads_++));
  write_file(file, bytes);
  put_blob(container, name, file, account);
  std::filesystem::remove(file);
}

void AzuriteServer::put_directory(const std::string& container, const std::string& prefix,
                                  const std::filesystem::path& directory) const {
  tool({"put-dir", container, prefix, directory.string()});
}

void AzuriteServer::delete_blob(const std::string& container, const std::string& name) const {
  tool({"delete", container, name});
}

std::optional<std::string> AzuriteServer::blob_sha256(const std::string& container,
                                                      const std::string& name) const {
  auto digest = tool({"sha256", container, name});
  if (digest) digest->erase(digest->find_last_not_of('\n') + 1);
  return digest;
}

std::vector<std::string> AzuriteServer::list_blobs(const std::string& container,
                                                   const std::string& prefix) const {
  return lines_of(*tool({"list", container, prefix}));
}

std::string AzuriteServer::account_sas(const std::string& permissions,
                                       std::chrono::minutes lifetime) const {
  auto token = *tool({"account-sas", "--permissions", permissions, "--expiry-minutes",
                      minutes_argument(lifetime)});
  token.erase(token.find_last_not_of('\n') + 1);
  return token;
}

std::string AzuriteServer::container_sas(const std::string& container,
                                         const std::string& permissions,
                                         std::chrono::minutes lifetime) const {
  auto token = *tool({"container-sas", container, "--permissions", permissions, "--expiry-minutes",
                      minutes_argument(lifetime)});
  token.erase(token.find_last_not_of('\n') + 1);
  return token;
}

std::optional<std::string> AzuriteServer::tool(const std::vector<std::string>& arguments,
                                               const std::string& account) const {
  std::vector<std::string> argv{azure_python, azure_blob_tool_script.string(),
                                "--connection-string", connection_string(account)};
  if (!ca_file_.empty()) argv.insert(argv.end(), {"--ca-file", ca_file_.string()});
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const ProcessResult result = run_process(argv);
  if (result.exit_code == azure_blob_missing_exit_code) return std::nullopt;
  if (result.exit_code != 0) {
    throw std::runtime_error("azure_blob_tool.py " + arguments.front() + " exited with " +
                             std::to_string(result.exit_code) + ": " + result.err);
  }
  return result.out;
}

}  // namespace tensorstream::testing
