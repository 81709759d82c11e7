#include "support/s3rver_server.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <tuple>

#include "storage/s3/sigv4.hpp"

namespace tensorstream::testing {
namespace {

const std::filesystem::path s3rver_script = TENSORSTREAM_S3RVER_SCRIPT;

}  // namespace

std::optional<std::string> S3rverServer::unavailable() {
  if (!find_program("node")) return "node is not installed (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(s3rver_script)) {
    return "s3rver is not installed at " + s3rver_script.string() +
           " (scripts/setup.sh runs npm ci there)";
  }
  if (!find_program("curl")) return "curl is not installed";
  return std::nullopt;
}

S3rverServer::S3rverServer(const std::vector<std::string>& buckets, std::optional<Tls> tls)
    : tls_(tls.has_value()) {
  const auto& dir = directory_.path();
  std::filesystem::create_directory(dir / "data");
  // s3rver encrypts continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
  std::vector<std::string> argv{find_program("node")->string(),
                                "--openssl-legacy-provider",
                                s3rver_script.string(),
                                "-d",
                                (dir / "data").string(),
                                "-a",
                                "127.0.0.1",
                                "-p",
                                "0"};
  if (tls) {
    argv.insert(argv.end(), {"--cert", tls->certificate.string(), "--key", tls->key.string()});
  }
  for (const auto& bucket : buckets) {
    argv.push_back("--configure-bucket");
    argv.push_back(bucket);
  }
  const auto log = dir / "s3rver.log";
  process_ = std::make_unique<ChildProcess>(argv, log);
  port_ = wait_for_announced_port(*process_, log, "S3rver listening on 127.0.0.1:");
}

S3rverServer::~S3rverServer() {
  if (process_) process_->stop();
}

std::string S3rverServer::endpoint() const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
}

void S3rverServer::put(const std::string& bucket, const std::string& key,
                       const std::filesystem::path& file) const {
  upload({{bucket + "/" + key, file}});
}

void S3rverServer::put_placeholder(const std::string& bucket, const std::string& key) const {
  // `curl --upload-file` would append the file's name to a URL ending in '/'.
  run_command({"curl", "-sSf", "--insecure", "-X", "PUT", "--data-binary", "", "-o", "/dev/null",
               endpoint() + "/" + s3::uri_encode(bucket + "/" + key, true)},
              directory_.path() / "upload.log");
}

void S3rverServer::put_directory(const std::string& bucket, const std::string& prefix,
                                 const std::filesystem::path& directory) const {
  std::vector<std::pair<std::string, std::filesystem::path>> objects;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (!entry.is_regular_file()) continue;
    objects.emplace_back(
        bucket + "/" + prefix + std::filesystem::relative(entry.path(), directory).string(),
        entry.path());
  }
  upload(objects);
}

void S3rverServer::put_many(const std::string& bucket, const std::string& prefix, int count,
                            const std::string& bytes) const {
  const auto content = directory_.path() / "content";
  std::ofstream(content, std::ios::binary) << bytes;
  std::vector<std::pair<std::string, std::filesystem::path>> objects;
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "obj-%05d", i);
    objects.emplace_back(bucket + "/" + prefix + name, content);
  }
  upload(objects);
}

// s3rver takes anonymous PUTs, so plain curl uploads; one curl run for all objects keeps its
// connection alive across them.
void S3rverServer::upload(
    const std::vector<std::pair<std::string, std::filesystem::path>>& objects) const {
  const auto config = directory_.path() / "upload.curlrc";
  {
    std::ofstream file(config);
    file << "fail\nsilent\nshow-error\n";
    for (const auto& [path, source] : objects) {
      file << "upload-file = \"" << source.string() << "\"\n"
           << "url = \"" << endpoint() << "/" << s3::uri_encode(path, true) << "\"\n"
           << "output = /dev/null\n";
    }
  }
  // The upload is not what a test checks, so it need not trust the test's CA.
  run_command({"curl", "--insecure", "--config", config.string()},
              directory_.path() / "upload.log");
}

std::filesystem::path S3rverServer::uploads_directory(const std::string& bucket) const {
  // lib/stores/filesystem.js: getResourcePath(bucket, undefined, 'uploads').
  return directory_.path() / "data" / bucket / "._S3rver_uploads";
}

std::vector<std::string> S3rverServer::unfinished_uploads(const std::string& bucket) const {
  std::vector<std::string> ids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(uploads_directory(bucket), error)) {
    ids.push_back(entry.path().filename().string());
  }
  return ids;
}

std::vector<S3rverServer::Upload> S3rverServer::unfinished_upload_details(
    const std::string& bucket) const {
  std::vector<Upload> uploads;
  for (const std::string& id : unfinished_uploads(bucket)) {
    // lib/stores/filesystem.js: initiateUpload writes the key into the upload's directory.
    const std::filesystem::path key_file = uploads_directory(bucket) / id / "key";
    struct stat status {};
    if (::stat(key_file.c_str(), &status) != 0) continue;  // Aborted meanwhile.
    const auto initiated = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(status.st_mtim.tv_sec) +
            std::chrono::nanoseconds(status.st_mtim.tv_nsec)));
    uploads.push_back(Upload{id, read_text_file(key_file), initiated});
  }
  std::sort(uploads.begin(), uploads.end(), [](const Upload& a, const Upload& b) {
    return std::tie(a.key, a.id) < std::tie(b.key, b.id);
  });
  return uploads;
}

bool S3rverServer::has_upload(const std::string& bucket, const std::string& id) const {
  std::error_code error;
  return std::filesystem::is_directory(uploads_directory(bucket) / id, error);
}

bool S3rverServer::remove_upload(const std::string& bucket, const std::string& id) const {
  std::error_code error;
  return std::filesystem::remove_all(uploads_directory(bucket) / id, error) > 0;
}

}  // namespace tensorstream::testing
