#pragma once
// Requests to one HTTP(S) server with pooled connections and retries: the engine behind
// HttpStore, reusable by other backends that speak HTTP.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/http/backoff.hpp"
#include "storage/http/connection.hpp"
#include "storage/http/connection_pool.hpp"
#include "storage/http/proxy.hpp"
#include "storage/http/response_waits.hpp"
#include "storage/http/service_adapter.hpp"
#include "storage/http/text_request.hpp"
#include "storage/response_version.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Runs requests against the server of `origin` (http or https), retrying transient failures.
///
/// Failures become exceptions naming `url`: NotFoundError for 404, StorageError otherwise, with
/// "(after N attempts)" appended when retries ran out. Cancelling the calling coroutine throws
/// boost::system::system_error(operation_aborted); the cancellation reaches the attempt on its
/// connection's strand, so callers may cancel from any strand.
///
/// A storage service's `adapter` adds credentials to every attempt and interprets its error
/// bodies before the retry decision, so that e.g. S3's RequestTimeout (a 400) is retried.
///
/// Size and range reads follow redirects, up to options.max_redirects, to other servers too
/// (never from https to http), and remember where each object's redirects led: later reads of
/// the same target go there directly, and once more from the start when that location answers
/// 403, 404 or 410 (a presigned URL that expired, say). Credentials of the adapter go to the
/// server of `origin` only. Other requests report redirects as failures.
///
/// Connections go through the proxy options.proxies (or the environment) names for their
/// server.
///
/// At most options.max_connections requests run at a time to each server (clamped to
/// HttpOptions::max_connections_limit); more wait for a connection. Constructing a client raises
/// the process's soft limit of open files to the hard limit.
class HttpClient {
 public:
  /// Throws InvalidArgument when https trust cannot be set up, max_connections is 0 or a proxy
  /// cannot be used.
  HttpClient(boost::asio::any_io_executor executor, const Url& origin, HttpOptions options,
             std::shared_ptr<ServiceAdapter> adapter = nullptr);

  /// A client whose connections, to every server, come from `connect` (tests run them in memory)
  /// and whose backoff delays come from `jitter`.
  HttpClient(std::string host_header, HttpOptions options, ConnectionPool::Factory connect,
             Jitter jitter);

  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Content-Length of `target` (path and query), from a HEAD request; sets `version` to the
  /// version the response names.
  boost::asio::awaitable<std::uint64_t> content_length(std::string_view target,
                                                       const std::string& url,
                                                       ResponseVersion& version);

  /// Fills `destination` with the bytes of `target` starting at `offset`, from the object's
  /// `version` only (see RangeRequest::pin) or, when `version` is empty, from the version the
  /// first response names, which is then stored in `version`.
  boost::asio::awaitable<void> read_range(std::string_view target, const std::string& url,
                                          std::uint64_t offset, std::span<std::byte> destination,
                                          ResponseVersion& version);

  /// The body of `target` (a 200 response), at most `max_size` bytes: listings, metadata.
  boost::asio::awaitable<std::string> get_text(std::string_view target, const std::string& url,
                                               std::size_t max_size);

  /// Sends `body` to `target` (an upload or another request that changes the server's state)
  /// and returns its 200 or 204 response, whose body may have at most `max_size` bytes. Retried
  /// like reads, resending the whole body (or what body.before_repeat gives): only for requests
  /// that may be repeated.
  boost::asio::awaitable<TextResponse> send(std::string_view target, const std::string& url,
                                            std::size_t max_size, RequestBody body);

  /// Counters so far, io_mode "http" or "https".
  StoreStats stats() const;

 private:
  // Makes an unopened connection to a server.
  using Connect = std::function<std::unique_ptr<Connection>(const ServerAddress&)>;

  // One server: its address, the Host header of its requests, and its connections.
  struct Endpoint {
    Endpoint(Url origin, ServerAddress server, Connect connect, std::size_t max_in_use,
             std::size_t max_idle);

    Url origin;
    std::string host_header;
    ServerAddress server;
    ConnectionPool pool;
  };
  // Where an object's redirects led.
  struct Location {
    Endpoint* endpoint;
    std::string target;
  };
  // The last failure of a request that gave up, and the attempts it took.
  struct Outcome {
    Failure failure;
    int attempts = 0;
  };

  // Runs `request` on `endpoint`, retrying transient failures; nullopt once it succeeded.
  template <class Request>
  boost::asio::awaitable<std::optional<Outcome>> perform(Request& request, Endpoint& endpoint,
                                                         const std::string& url);
  // perform(), then throws the failure as HttpClient's documentation says.
  template <class Request>
  boost::asio::awaitable<void> perform(Request& request, const std::string& url);
  // perform() from the last location of `target`, following redirects.
  template <class Request>
  boost::asio::awaitable<void> follow(Request& request, std::string_view target,
                                      const std::string& url);
  // Opens `connection` if needed and runs one attempt of `request` on it, on its strand.
  template <class Request>
  boost::asio::awaitable<std::optional<Failure>> attempt(Request& request, Connection& connection,
                                                         const Endpoint& endpoint);
  // The endpoint of `origin`'s server, made at its first use.
  Endpoint& endpoint(const Url& origin);

  HttpOptions options_;
  std::shared_ptr<ServiceAdapter> adapter_;
  ProxyRoutes proxies_;
  // HttpOptions::response_timeout, or what the environment or the default gives.
  std::chrono::milliseconds response_timeout_;
  Jitter jitter_;
  Connect connect_;
  // Declared before the endpoints, whose requests' waits end in it, so that it outlives them.
  ResponseWaits waits_;
  // Guards tls_, home_'s creation, others_ and locations_.
  std::mutex mutex_;
  // Shared by the https endpoints; made with the first.
  std::optional<boost::asio::ssl::context> tls_;
  // The server of the origin the client was made for.
  std::unique_ptr<Endpoint> home_;
  // Servers redirects led to, by origin.
  std::map<std::string, std::unique_ptr<Endpoint>> others_;
  // Where the redirects of each target led, for targets that were redirected.
  std::map<std::string, Location, std::less<>> locations_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> retries_{0};
  std::atomic<std::uint64_t> connections_{0};
  std::atomic<std::uint64_t> tls_resumed_{0};
  std::atomic<bool> warned_range_ignored_{false};
};

}  // namespace tensorstream
