#include "storage/http/connection.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/resource.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/system/errc.hpp>
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "storage/http/status_failure.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

std::string milliseconds_text(std::chrono::milliseconds timeout) {
  return std::to_string(timeout.count()) + " ms";
}

// The process or the system ran out of file descriptors. Retrying only makes it worse, and the
// error must say so plainly: the cure is fewer connections or a higher limit.
bool is_descriptor_exhaustion(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors ||
         ec == boost::system::errc::too_many_files_open_in_system;
}

Failure descriptor_failure(const beast::error_code& ec) {
  std::string cause = "cannot connect: " + ec.message();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    cause += "; the process may open " + std::to_string(limit.rlim_cur) + " files";
  }
  return permanent_failure(cause + "; lower the concurrency or raise the limit (ulimit -n)");
}

// "host:port" of every server (or proxy) this process has connected to. A refusal from one of
// them is a restart or an overload, worth retrying; from one never reached, nothing listens
// there, and retrying only makes a typo look like a hang (curl fails at once too).
class ReachedServers {
 public:
  void add(const std::string& server) {
    std::lock_guard lock(mutex_);
    servers_.insert(server);
  }

  bool contains(const std::string& server) const {
    std::lock_guard lock(mutex_);
    return servers_.contains(server);
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_set<std::string> servers_;
};

ReachedServers& reached_servers() {
  static ReachedServers servers;
  return servers;
}

Failure connect_failure(const beast::error_code& ec, std::chrono::milliseconds timeout,
                        const std::string& server) {
  if (is_descriptor_exhaustion(ec)) return descriptor_failure(ec);
  if (ec == beast::error::timeout) {
    return transient_failure("connect timed out after " + milliseconds_text(timeout));
  }
  if (ec == asio::error::connection_refused) {
    if (reached_servers().contains(server)) return transient_failure("connection refused");
    return permanent_failure("connection refused (nothing listens there)");
  }
  return transient_failure("cannot connect: " + ec.message());
}

Failure resolve_failure(const beast::error_code& ec, const std::string& host,
                        std::chrono::milliseconds timeout) {
  if (is_descriptor_exhaustion(ec)) return descriptor_failure(ec);
  if (ec == asio::error::operation_aborted) {
    return transient_failure("resolving host '" + host + "' timed out after " +
                             milliseconds_text(timeout));
  }
  // An authoritative "no such host" will not change on a retry; anything else might.
  return {"cannot resolve host '" + host + "': " + ec.message(), ec != asio::error::host_not_found};
}

}  // namespace

Connection::Connection(const asio::any_io_executor& executor, const ServerAddress& server)
    : server_(&server), strand_(asio::make_strand(executor)) {
  if (server_->tls != nullptr) {
    tls_.emplace(strand_, *server_->tls);
  } else {
    plain_.emplace(strand_);
  }
}

Connection::Connection(Strand strand, MemoryStream stream, StallTimer* stall_timer)
    : strand_(std::move(strand)),
      memory_(std::move(stream)),
      memory_open_(true),
      stall_timer_(stall_timer) {}

beast::tcp_stream& Connection::tcp() { return tls_ ? tls_->next_layer() : *plain_; }

const beast::tcp_stream& Connection::tcp() const { return tls_ ? tls_->next_layer() : *plain_; }

void Connection::expire_after(std::chrono::milliseconds timeout) {
  if (!memory_) {
    tcp().expires_after(timeout);
  } else if (stall_timer_ != nullptr) {
    // As beast::tcp_stream does on its timeout: close the stream, which aborts the operation.
    stall_timer_->arm(timeout, [this] {
      stalled_ = true;
      memory_->close();
    });
  }
}

Connection::ErrorCode Connection::settle(ErrorCode ec) {
  if (!memory_ || stall_timer_ == nullptr) return ec;
  stall_timer_->disarm();
  if (!stalled_) return ec;
  stalled_ = false;
  memory_open_ = false;
  return beast::error::timeout;
}

asio::awaitable<std::optional<Failure>> Connection::open(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto failure = co_await connect(deadline);
  if (failure && server_->proxy) {
    failure->cause = "proxy " + server_->proxy->url + ": " + failure->cause;
  }
  if (!failure && tls_ && server_->proxy) failure = co_await tunnel(deadline);
  if (!failure && tls_) failure = co_await handshake(deadline);
  if (failure) {
    close();
    co_return failure;
  }
  tcp().expires_never();
  co_return std::nullopt;
}

asio::awaitable<std::optional<Failure>> Connection::connect(
    std::chrono::steady_clock::time_point deadline) {
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  const std::string& host = server_->proxy ? server_->proxy->host : server_->host;
  const std::uint16_t port = server_->proxy ? server_->proxy->port : server_->port;
  tcp::resolver::results_type endpoints;
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoints = tcp::resolver::results_type::create(tcp::endpoint(address, port), host,
                                                    std::to_string(port));
  } else {
    // getaddrinfo cannot be interrupted; the timer only abandons it. The timer's handler holds
    // the resolver weakly because it may run after this coroutine has finished with both.
    auto resolver = std::make_shared<tcp::resolver>(strand_);
    asio::steady_timer timer(strand_, deadline);
    timer.async_wait(asio::bind_executor(
        strand_, [weak = std::weak_ptr<tcp::resolver>(resolver)](const beast::error_code& e) {
          if (e) return;
          if (auto live = weak.lock()) live->cancel();
        }));
    const std::string service = std::to_string(port);
    auto [resolve_error, results] = co_await resolver->async_resolve(host, service, token());
    timer.cancel();
    if (resolve_error) co_return resolve_failure(resolve_error, host, timeout);
    endpoints = std::move(results);
  }

  // The connect operation reports a failure to create its socket only as its last error, which
  // a timeout can replace; creating one here first names descriptor exhaustion reliably.
  const std::string server = host + ':' + std::to_string(port);
  tcp().socket().open(endpoints.begin()->endpoint().protocol(), ec);
  if (ec) co_return connect_failure(ec, timeout, server);
  tcp().expires_at(deadline);
  auto [connect_error, endpoint] = co_await tcp().async_connect(endpoints, token());
  if (connect_error) co_return connect_failure(connect_error, timeout, server);
  reached_servers().add(server);
  // Requests are written in one piece; Nagle would only delay them behind the previous ACK.
  tcp().socket().set_option(tcp::no_delay(true), ec);
  co_return std::nullopt;
}

asio::awaitable<std::optional<Failure>> Connection::tunnel(
    std::chrono::steady_clock::time_point deadline) {
  const Proxy& proxy = *server_->proxy;
  const bool ipv6 = server_->host.find(':') != std::string::npos;
  const std::string authority = (ipv6 ? "[" + server_->host + "]" : server_->host) + ":" +
                                std::to_string(server_->port);
  request_ = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority +
             "\r\nUser-Agent: tensorstream\r\n";
  if (!proxy.authorization.empty()) {
    request_ += "Proxy-Authorization: " + proxy.authorization + "\r\n";
  }
  request_ += "\r\n";
  const std::string refused = "proxy " + proxy.url + " refused CONNECT to " + authority + ": ";
  tcp().expires_at(deadline);
  auto [write_error, written] = co_await asio::async_write(tcp(), asio::buffer(request_), token());
  if (write_error) co_return transient_failure(refused + write_error.message());
  HeaderParser parser;
  // A successful answer has no body: the tunnel starts right after its header.
  parser.skip(true);
  auto [read_error, parsed] =
      co_await beast::http::async_read_header(tcp(), buffer_, parser, token());
  if (read_error == beast::error::timeout) {
    co_return transient_failure("proxy " + proxy.url + ": CONNECT to " + authority +
                                " timed out");
  }
  if (read_error) co_return transient_failure(refused + read_error.message());
  const unsigned status = parser.get().result_int();
  if (status / 100 == 2) co_return std::nullopt;
  Failure failure{refused + status_text(parser), status >= 500};
  co_return failure;
}

asio::awaitable<std::optional<Failure>> Connection::handshake(
    std::chrono::steady_clock::time_point deadline) {
  SSL* ssl = tls_->native_handle();
  beast::error_code ec;
  asio::ip::make_address(server_->host, ec);
  const bool ip_literal = !ec;
  // SNI carries host names only; an IP literal is not allowed there (RFC 6066).
  if (!ip_literal && SSL_set_tlsext_host_name(ssl, server_->host.c_str()) != 1) {
    co_return permanent_failure("TLS handshake failed: cannot set SNI host name '" + server_->host +
                                "'");
  }
  if (server_->verify_host) {
    // OpenSSL checks the name (or address) during verification, as RFC 6125 says.
    X509_VERIFY_PARAM* parameters = SSL_get0_param(ssl);
    const int set = ip_literal
                        ? X509_VERIFY_PARAM_set1_ip_asc(parameters, server_->host.c_str())
                        : X509_VERIFY_PARAM_set1_host(parameters, server_->host.c_str(), 0);
    if (set != 1) {
      co_return permanent_failure("TLS handshake failed: cannot check the certificate for host '" +
                                  server_->host + "'");
    }
  }

  tcp().expires_at(deadline);
  auto [handshake_error] = co_await tls_->async_handshake(token());
  if (!handshake_error) co_return std::nullopt;
  if (handshake_error == beast::error::timeout) {
    co_return transient_failure("TLS handshake timed out");
  }
  if (handshake_error.category() != asio::error::get_ssl_category()) {
    // The server went away mid-handshake: a network failure, worth another try.
    co_return transient_failure("TLS handshake failed: " + handshake_error.message());
  }
  const char* reason = ERR_reason_error_string(static_cast<unsigned long>(handshake_error.value()));
  std::string cause = "TLS handshake failed: ";
  cause += reason != nullptr ? reason : handshake_error.message();
  const long verify_result = SSL_get_verify_result(ssl);
  if (verify_result == X509_V_ERR_HOSTNAME_MISMATCH ||
      verify_result == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    cause += " (certificate does not match host '" + server_->host + "')";
  } else if (verify_result != X509_V_OK) {
    cause += " (";
    cause += X509_verify_cert_error_string(verify_result);
    cause += ")";
  }
  co_return permanent_failure(std::move(cause));
}

asio::awaitable<Connection::ErrorCode> Connection::write_request(
    std::chrono::milliseconds timeout) {
  expire_after(timeout);
  auto [ec, written] = co_await on_stream(
      [&](auto& stream, auto completion) {
        return asio::async_write(stream, asio::buffer(request_), completion);
      });
  co_return settle(ec);
}

asio::awaitable<Connection::ErrorCode> Connection::write_body(std::span<const std::byte> body,
                                                              std::chrono::milliseconds timeout) {
  // One piece per deadline: large enough to keep the socket busy, small enough that a healthy
  // but slow link sends it well within any sensible timeout.
  constexpr std::size_t piece = std::size_t{1} << 20;
  while (!body.empty()) {
    const auto next = body.first(std::min(piece, body.size()));
    expire_after(timeout);
    auto [ec, written] = co_await on_stream([&](auto& stream, auto completion) {
      return asio::async_write(stream, asio::buffer(next.data(), next.size()), completion);
    });
    if (ec) co_return settle(ec);
    body = body.subspan(next.size());
  }
  co_return ErrorCode{};
}

asio::awaitable<Connection::ErrorCode> Connection::read_header(HeaderParser& parser,
                                                               std::chrono::milliseconds timeout) {
  expire_after(timeout);
  auto [ec, parsed] = co_await on_stream([&](auto& stream, auto completion) {
    return beast::http::async_read_header(stream, buffer_, parser, completion);
  });
  co_return settle(ec);
}

asio::awaitable<Connection::ErrorCode> Connection::read_some(BufferParser& parser,
                                                             std::chrono::milliseconds timeout) {
  expire_after(timeout);
  auto [ec, parsed] = co_await on_stream(
      [&](auto& stream, auto completion) {
        return beast::http::async_read_some(stream, buffer_, parser, completion);
      });
  co_return settle(ec);
}

asio::awaitable<Connection::ErrorCode> Connection::read(TextParser& parser,
                                                        std::chrono::milliseconds timeout) {
  expire_after(timeout);
  auto [ec, parsed] = co_await on_stream(
      [&](auto& stream, auto completion) {
        return beast::http::async_read(stream, buffer_, parser, completion);
      });
  co_return settle(ec);
}

asio::awaitable<std::pair<Connection::ErrorCode, std::size_t>> Connection::read_some(
    asio::mutable_buffer destination, std::chrono::milliseconds timeout) {
  expire_after(timeout);
  auto [ec, received] = co_await on_stream(
      [&](auto& stream, auto completion) {
        return stream.async_read_some(destination, completion);
      });
  co_return std::pair{settle(ec), received};
}

void Connection::close() {
  reusable_ = false;
  buffer_.clear();
  if (memory_) {
    memory_->close();
    memory_open_ = false;
    return;
  }
  beast::error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp().close();
}

}  // namespace tensorstream
