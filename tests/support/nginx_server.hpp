#pragma once
// A real nginx for integration tests and benchmarks.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream::testing {

/// nginx serving a directory on an ephemeral 127.0.0.1 port, from construction until
/// destruction.
///
/// The generated configuration keeps every file nginx writes (pid, logs, temp directories) in
/// a private temporary directory, turns the access log off, serves files with sendfile and
/// allows 100000 requests per keep-alive connection, so clients can be measured against it.
/// Typical use:
///
///     if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
///     NginxServer nginx({.root = dir.path(),
///                        .extra_config = "location /forbidden/ { return 403; }"});
///     auto url = nginx.base_url() + "/model.safetensors";
class NginxServer {
 public:
  /// What to serve and how.
  struct Options {
    std::filesystem::path root{};         ///< Directory served at "/".
    std::filesystem::path certificate{};  ///< With `key`, serve HTTPS with this PEM chain.
    std::filesystem::path key{};          ///< PEM private key of `certificate`.
    std::string extra_config{};           ///< Directives added to the server block, e.g.
                                          ///< "location /norange/ { max_ranges 0; }".
    int worker_processes = 1;             ///< More than one runs a master process too.
  };

  /// Where nginx is expected.
  static constexpr const char* program = "/usr/sbin/nginx";

  /// Whether nginx is installed; tests call TENSORSTREAM_SKIP_UNLESS_CI otherwise.
  static bool available();

  /// Starts nginx and returns once it accepts connections. Retries with another port when the
  /// one picked was taken meanwhile. Throws std::runtime_error quoting nginx's error log when
  /// it does not come up.
  explicit NginxServer(Options options);

  /// Stops nginx (SIGTERM, then SIGKILL if it lingers) and removes its files.
  ~NginxServer();

  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  /// The port nginx listens on, on 127.0.0.1.
  std::uint16_t port() const { return port_; }

  /// "http://127.0.0.1:PORT", or "https://..." when serving TLS.
  std::string base_url() const;

  /// nginx's error log, for diagnosing a failing test.
  std::filesystem::path error_log() const { return directory_.path() / "error.log"; }

 private:
  bool start();

  Options options_;
  TempDir directory_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

/// Bytes an nginx sent, summed over `access_log`, a log in the "combined" format (the number after
/// the status, after the quoted request line): what it served, counted rather than assumed. Add
/// `access_log PATH;` to Options::extra_config to have one.
std::uint64_t served_bytes(const std::filesystem::path& access_log);

/// A port on 127.0.0.1 that was free a moment ago (bound with port 0, then released).
std::uint16_t pick_free_port();

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
bool accepts_connections(std::uint16_t port);

}  // namespace tensorstream::testing
