#pragma once
// A real S3 server for integration tests: s3rver, pinned under third_party/s3rver.

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

/// s3rver on an ephemeral 127.0.0.1 port, from construction until destruction, with its buckets
/// in a private temporary directory.
///
/// s3rver knows one access key, S3RVER / S3RVER (access_key_id, secret_access_key). It rejects
/// other access key ids (InvalidAccessKeyId) but does not check signatures; tests that need
/// signatures checked put a SignatureVerifier in front of it.
///
///     if (auto why = S3rverServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
///     S3rverServer s3({"models"});
///     s3.put_directory("models", "llama/", model_dir);
class S3rverServer {
 public:
  /// The access key id s3rver accepts.
  static constexpr const char* access_key_id = "S3RVER";
  /// Its secret key.
  static constexpr const char* secret_access_key = "S3RVER";

  /// Why s3rver cannot run here (no node, or `npm ci` not run), or nullopt when it can.
  static std::optional<std::string> unavailable();

  /// A certificate and its key (PEM files) to serve https with.
  struct Tls {
    std::filesystem::path certificate;
    std::filesystem::path key;
  };

  /// Starts s3rver with `buckets` created, serving https when `tls` is given, and returns once it
  /// accepts connections. Throws std::runtime_error quoting its output when it does not come up.
  explicit S3rverServer(const std::vector<std::string>& buckets,
                        std::optional<Tls> tls = std::nullopt);

  /// Stops s3rver and removes its data.
  ~S3rverServer();

  S3rverServer(const S3rverServer&) = delete;
  S3rverServer& operator=(const S3rverServer&) = delete;

  /// The port s3rver listens on, on 127.0.0.1.
  std::uint16_t port() const { return port_; }

  /// "http://127.0.0.1:PORT" (https with TLS), the endpoint to give clients.
  std::string endpoint() const;

  /// Uploads `file` as `key` of `bucket`.
  void put(const std::string& bucket, const std::string& key,
           const std::filesystem::path& file) const;

  /// Creates the zero-byte "directory placeholder" `key` (ending in '/') that consoles and some
  /// tools make.
  void put_placeholder(const std::string& bucket, const std::string& key) const;

  /// Uploads every regular file under `directory`, recursively, as `prefix` + its relative path,
  /// in one curl run.
  void put_directory(const std::string& bucket, const std::string& prefix,
                     const std::filesystem::path& directory) const;

  /// Creates `count` objects `prefix` + "obj-NNNNN" with `bytes` as content, in one curl run.
  void put_many(const std::string& bucket, const std::string& prefix, int count,
                const std::string& bytes) const;

  /// The ids of `bucket`'s multipart uploads that were started and neither completed nor
  /// aborted, read from s3rver's storage directory: s3rver implements neither
  /// ListMultipartUploads nor AbortMultipartUpload.
  std::vector<std::string> unfinished_uploads(const std::string& bucket) const;

  /// An unfinished multipart upload as s3rver stores it.
  struct Upload {
    std::string id;
    std::string key;  ///< The object key, without a leading '/'.
    std::chrono::system_clock::time_point initiated;  ///< When CreateMultipartUpload stored it.
  };

  /// unfinished_uploads() with their keys and times, sorted by key, then id: what
  /// ListMultipartUploads would list.
  std::vector<Upload> unfinished_upload_details(const std::string& bucket) const;

  /// Whether `bucket` holds the unfinished multipart upload `id`.
  bool has_upload(const std::string& bucket, const std::string& id) const;

  /// What AbortMultipartUpload would do, which s3rver answers with 405 MethodNotAllowed: removes
  /// the upload `id` of `bucket` with its parts. Returns whether there was one.
  bool remove_upload(const std::string& bucket, const std::string& id) const;

 private:
  // Where s3rver keeps `bucket`'s unfinished multipart uploads, one directory each.
  std::filesystem::path uploads_directory(const std::string& bucket) const;
  void upload(const std::vector<std::pair<std::string, std::filesystem::path>>& objects) const;

  TempDir directory_;
  bool tls_ = false;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace tensorstream::testing
