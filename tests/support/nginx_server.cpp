#include "support/nginx_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tensorstream::testing {
namespace {

constexpr int start_attempts = 5;
constexpr auto start_timeout = std::chrono::seconds(10);
constexpr auto poll_interval = std::chrono::milliseconds(2);

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

}  // namespace

std::uint16_t pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address = loopback(0);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error(std::string("cannot pick a port: ") + std::strerror(error));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

bool accepts_connections(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const sockaddr_in address = loopback(port);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

bool NginxServer::available() { return ::access(program, X_OK) == 0; }

NginxServer::NginxServer(Options options) : options_(std::move(options)) {
  for (int attempt = 0; attempt < start_attempts; ++attempt) {
    if (start()) return;
  }
  throw std::runtime_error("nginx did not start after " + std::to_string(start_attempts) +
                           " attempts: " + read_text_file(error_log()));
}

NginxServer::~NginxServer() {
  if (process_) process_->stop();
}

std::string NginxServer::base_url() const {
  return std::string(options_.certificate.empty() ? "http" : "https") +
         "://127.0.0.1:" + std::to_string(port_);
}

// One try on a freshly picked port: false when the port was taken in the meantime.
bool NginxServer::start() {
  port_ = pick_free_port();
  const auto& dir = directory_.path();
  const bool tls = !options_.certificate.empty();
  const auto config_path = dir / "nginx.conf";
  {
    std::ofstream config(config_path);
    config << "daemon off;\n";
    if (options_.worker_processes > 1) {
      config << "worker_processes " << options_.worker_processes << ";\n";
      // Workers would otherwise drop to 'nobody' and could not read mkdtemp's 0700 directories.
      if (::geteuid() == 0) config << "user root;\n";
    } else {
      config << "master_process off;\nworker_processes 1;\n";
    }
    config << "pid " << (dir / "nginx.pid").string() << ";\n"
           << "error_log " << error_log().string() << " warn;\n"
           << "events { worker_connections 4096; }\n"
           << "http {\n"
           << "  access_log off;\n"
           << "  sendfile on;\n  tcp_nopush on;\n  tcp_nodelay on;\n"
           << "  keepalive_requests 100000;\n  keepalive_timeout 300s;\n"
           << "  types { application/octet-stream safetensors bin; application/json json;"
              " text/plain txt; }\n"
           << "  default_type application/octet-stream;\n";
    for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
      config << "  " << temp << "_temp_path " << (dir / temp).string() << ";\n";
    }
    config << "  server {\n"
           << "    listen 127.0.0.1:" << port_ << (tls ? " ssl" : "") << ";\n"
           << "    root " << options_.root.string() << ";\n";
    if (tls) {
      config << "    ssl_certificate " << options_.certificate.string() << ";\n"
             << "    ssl_certificate_key " << options_.key.string() << ";\n"
             << "    ssl_protocols TLSv1.2 TLSv1.3;\n";
    }
    config << "    " << options_.extra_config << "\n  }\n}\n";
  }

  std::filesystem::remove(error_log());
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{program, "-p", dir.string(), "-e", error_log().string(), "-c",
                               config_path.string()},
      dir / "nginx.out");
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_->exited()) {
      const std::string log = read_text_file(error_log()) + read_text_file(dir / "nginx.out");
      process_.reset();
      if (log.find("Address already in use") != std::string::npos) return false;
      throw std::runtime_error("nginx exited at start: " + log);
    }
    // Another program may have taken the port: only a connection while nginx runs counts.
    if (accepts_connections(port_) && !process_->exited()) return true;
    std::this_thread::sleep_for(poll_interval);
  }
  process_->stop();
  process_.reset();
  throw std::runtime_error("nginx did not accept connections within 10 s: " +
                           read_text_file(error_log()));
}

std::uint64_t served_bytes(const std::filesystem::path& access_log) {
  std::ifstream in(access_log);
  std::uint64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line.substr(line.find("\" ", line.find('"') + 1) + 2));
    int status = 0;
    std::uint64_t bytes = 0;
    fields >> status >> bytes;
    total += bytes;
  }
  return total;
}

}  // namespace tensorstream::testing
