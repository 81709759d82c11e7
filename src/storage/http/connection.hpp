#pragma once
// One HTTP/1.1 connection, plain, TLS or in memory, used by one request at a time.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "storage/http/failure.hpp"
#include "storage/http/proxy.hpp"
#include "storage/http/response_waits.hpp"
#include "storage/http/tls_stream.hpp"

namespace tensorstream {

/// Parses a response up to the end of its header; the body is read by other means.
using HeaderParser = boost::beast::http::response_parser<boost::beast::http::empty_body>;
/// Reads a (chunked) body into memory the caller points it at.
using BufferParser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;
/// Reads a small body, such as the text of an error response, into a string.
using TextParser = boost::beast::http::response_parser<boost::beast::http::string_body>;

/// The server a pool's connections go to.
struct ServerAddress {
  std::string host;  ///< Name or IP literal, without brackets.
  std::uint16_t port = 0;
  boost::asio::ssl::context* tls = nullptr;  ///< Null for plain HTTP.
  bool verify_host = true;                   ///< Check that the certificate names `host`.
  /// The proxy connections go through: requests of plain HTTP are forwarded by it, https runs
  /// through a CONNECT tunnel.
  std::optional<Proxy> proxy{};
};

/// The read and write deadline of an in-memory connection. Tests implement it with a clock they
/// advance by hand, so that stall detection is tested without waiting for it.
class StallTimer {
 public:
  virtual ~StallTimer() = default;
  /// Replaces any armed deadline with one `timeout` from now; on reaching it, calls `expired`
  /// on the connection's strand, once.
  virtual void arm(std::chrono::milliseconds timeout, std::function<void()> expired) = 0;
  /// Forgets the armed deadline, if any.
  virtual void disarm() = 0;
};

/// A connection to one server.
///
/// Every handler of the connection runs on its own strand, across all the requests it serves, so
/// the stream's timers stay serialized with its reads even when several threads run the
/// io_context. A request runs on strand() and calls only the members below.
///
/// Besides TCP and TLS a connection can run over Beast's in-memory test stream, so that tests
/// drive the protocol with a fail counter and one byte per read, without sockets or sleeps. The
/// stream is chosen per operation by one branch, which costs nothing next to a system call.
class Connection {
 public:
  using Strand = boost::asio::strand<boost::asio::any_io_executor>;
  using ErrorCode = boost::beast::error_code;
  /// The in-memory transport: the server's end is a peer stream the test holds.
  using MemoryStream = boost::beast::test::basic_stream<boost::asio::any_io_executor>;

  /// An unopened connection to `server`, which must outlive it.
  Connection(const boost::asio::any_io_executor& executor, const ServerAddress& server);

  /// An open connection over `stream`, used by requests running on `strand`. Each operation's
  /// timeout runs on `stall_timer`, which must outlive the connection; without one no timeout
  /// is armed, and the stream's fail counter can stand in for them.
  Connection(Strand strand, MemoryStream stream, StallTimer* stall_timer = nullptr);

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Where every operation on the connection must run.
  const Strand& strand() const { return strand_; }

  /// Resolves, connects (to the proxy, if any, and for https through its tunnel) and, for
  /// https, handshakes, all within `timeout`. Failures on the way to a proxy name it.
  boost::asio::awaitable<std::optional<Failure>> open(std::chrono::milliseconds timeout);

  /// Whether the TLS handshake resumed an earlier session of the same server.
  bool tls_resumed() const { return tls_ && SSL_session_reused(tls_->native_handle()) == 1; }
  /// The proxy that forwards this connection's requests (plain HTTP through a proxy), which then
  /// carry absolute URLs; null otherwise.
  const Proxy* forwarding_proxy() const {
    return server_ != nullptr && server_->proxy && !tls_ ? &*server_->proxy : nullptr;
  }
  /// Whether open() succeeded and nothing has closed the connection since.
  bool is_open() const { return memory_ ? memory_open_ : tcp().socket().is_open(); }

  /// Sends request() in full.
  boost::asio::awaitable<ErrorCode> write_request(std::chrono::milliseconds timeout);

  /// Sends `body` after request(), in pieces, each of which must go out within `timeout`:
  /// a slow link may take longer for the whole body, a stalled one is caught.
  boost::asio::awaitable<ErrorCode> write_body(std::span<const std::byte> body,
                                               std::chrono::milliseconds timeout);

  /// Reads a response header; body bytes that came with it stay in buffer().
  boost::asio::awaitable<ErrorCode> read_header(HeaderParser& parser,
                                                std::chrono::milliseconds timeout);

  /// Feeds the parser more of the body; need_buffer means the body buffer is full.
  boost::asio::awaitable<ErrorCode> read_some(BufferParser& parser,
                                              std::chrono::milliseconds timeout);

  /// Reads the rest of a small body; `timeout` covers the whole body.
  boost::asio::awaitable<ErrorCode> read(TextParser& parser, std::chrono::milliseconds timeout);

  /// Reads at least one byte straight into `destination`, bypassing buffer().
  boost::asio::awaitable<std::pair<ErrorCode, std::size_t>> read_some(
      boost::asio::mutable_buffer destination, std::chrono::milliseconds timeout);

  /// Bytes received but not yet parsed: the start of a body, or of the next response.
  boost::beast::flat_buffer& buffer() { return buffer_; }

  /// Storage for the next request's text, kept to avoid allocating per request.
  std::string& request() { return request_; }

  /// Whether the last response was read to its end and the server keeps the connection open.
  bool reusable() const { return reusable_; }
  void set_reusable(bool reusable) { reusable_ = reusable; }

  /// How requests on this connection wait for a response header: at most `timeout`, shown in
  /// `waits` as a wait for `host` (both outliving the requests). The client sets it before each
  /// request; without it the request's own timeout bounds the wait, and nothing shows it.
  struct ResponseWatch {
    ResponseWaits* waits = nullptr;
    const std::string* host = nullptr;
    std::chrono::milliseconds timeout{0};
  };
  void watch_responses(const ResponseWatch& watch) { response_watch_ = watch; }
  const std::optional<ResponseWatch>& response_watch() const { return response_watch_; }

  /// The status of the last response header read, 0 before the first: for the trace log.
  unsigned last_status() const { return last_status_; }
  void set_last_status(unsigned status) { last_status_ = status; }

  /// Closes the socket without a TLS close_notify; the server copes.
  void close();

 private:
  auto token() {
    return boost::asio::bind_executor(strand_, boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  boost::beast::tcp_stream& tcp();
  const boost::beast::tcp_stream& tcp() const;
  // Bounds the next operation by `timeout`.
  void expire_after(std::chrono::milliseconds timeout);
  // What an operation that ended with `ec` reports: an in-memory stream cut off by its stall
  // timer reports a timeout, as a TCP stream does.
  ErrorCode settle(ErrorCode ec);
  boost::asio::awaitable<std::optional<Failure>> connect(
      std::chrono::steady_clock::time_point deadline);
  // Asks the proxy for a tunnel to the server.
  boost::asio::awaitable<std::optional<Failure>> tunnel(
      std::chrono::steady_clock::time_point deadline);
  boost::asio::awaitable<std::optional<Failure>> handshake(
      std::chrono::steady_clock::time_point deadline);

  // Runs `operation` on whichever stream this connection speaks: TLS, plain TCP or memory.
  template <class Operation>
  auto on_stream(Operation&& operation) {
    if (tls_) return operation(*tls_, token());
    if (plain_) return operation(*plain_, token());
    // Beast's test stream cannot count work on a strand executor. It needs no binding anyway:
    // requests run on the strand, and nothing else touches an in-memory connection.
    return operation(*memory_, boost::asio::as_tuple(boost::asio::use_awaitable));
  }

  const ServerAddress* server_ = nullptr;
  Strand strand_;
  std::optional<boost::beast::tcp_stream> plain_;
  std::optional<TlsStream> tls_;
  std::optional<MemoryStream> memory_;
  bool memory_open_ = false;
  StallTimer* stall_timer_ = nullptr;
  bool stalled_ = false;
  boost::beast::flat_buffer buffer_;
  std::string request_;
  bool reusable_ = false;
  std::optional<ResponseWatch> response_watch_;
  unsigned last_status_ = 0;
};

}  // namespace tensorstream
