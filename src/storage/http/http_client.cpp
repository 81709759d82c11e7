#include "storage/http/http_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>

#include "async/run_on_strand.hpp"
#include "base/environment_setting.hpp"
#include "storage/http/head_request.hpp"
#include "storage/http/open_file_limit.hpp"
#include "storage/http/range_request.hpp"
#include "storage/http/redirect.hpp"
#include "storage/http/text_request.hpp"
#include "storage/http/tls_context.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;

[[noreturn]] void throw_failure(const std::string& url, const Failure& failure, int attempts) {
  if (failure.not_found) throw NotFoundError(url, failure.cause);
  // Refused, whatever the service's error document calls it (S3's InvalidAccessKeyId,
  // SignatureDoesNotMatch, AccessDenied; GCS's 401 and 403 alike).
  if (failure.status == 401 || failure.status == 403) {
    throw StorageError(url, failure.cause, false, ErrorKind::access_denied);
  }
  if (!failure.transient) throw StorageError(url, failure.cause, false);
  throw StorageError(url,
                     failure.cause + " (after " + std::to_string(attempts) +
                         (attempts == 1 ? " attempt)" : " attempts)"),
                     true);
}

asio::awaitable<void> throw_if_cancelled() {
  const auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

// HttpOptions::response_timeout where the options leave it unset.
std::chrono::milliseconds response_timeout_from_environment() {
  const auto setting = detail::environment_setting("RESPONSE_TIMEOUT");
  return setting ? detail::positive_seconds(*setting) : HttpOptions::default_response_timeout;
}

std::size_t max_connections(const HttpOptions& options) {
  if (options.max_connections == 0) {
    throw InvalidArgument("HttpOptions::max_connections must be at least 1");
  }
  return std::min(options.max_connections, HttpOptions::max_connections_limit);
}

// "GET https://host/key bytes=0-1023": what an attempt of `request` asks of `origin`, for the
// trace log; after a redirect, where it was sent rather than the object's own URL.
template <class Request>
std::string describe_attempt(Request& request, const Url& origin,
                             const std::string& credentials_trace) {
  const RequestHead head = request.head();
  std::string text =
      std::string(head.method) + ' ' + redact_query(origin.origin() + std::string(head.target));
  for (const auto& [name, value] : head.headers) {
    if (name == "Range") text += ' ' + std::string(value);
  }
  if (!credentials_trace.empty()) text += " (" + credentials_trace + ")";
  return text;
}

std::string seconds_text(std::chrono::nanoseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", std::chrono::duration<double>(duration).count());
  return text;
}

template <class Request>
asio::awaitable<void> prepare_repeat(Request& request) {
  if constexpr (requires { request.prepare_repeat(); }) co_await request.prepare_repeat();
}

// 429 and 503 (S3's SlowDown, GCS's rate limits) ask clients to send less.
bool is_throttling(const Failure& failure) {
  return failure.status == 429 || failure.status == 503;
}

// What a presigned URL or a CDN answers once the location it gave has expired.
bool is_stale_location(const Failure& failure) {
  return failure.status == 403 || failure.status == 404 || failure.status == 410;
}

// Whether `to` is `target` on `origin` with a '/' added to its path: a directory's redirect.
bool adds_a_slash(const Url& origin, std::string_view target, const Url& to) {
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  return to.scheme == origin.scheme && to.host == origin.host && to.port == origin.port &&
         to.query == query && to.path.size() == path.size() + 1 && to.path.back() == '/' &&
         std::string_view(to.path).starts_with(path);
}

// The origin-form target of `url`: its path and query.
std::string target_of(const Url& url) {
  return url.query.empty() ? url.path : url.path + "?" + url.query;
}

}  // namespace

HttpClient::Endpoint::Endpoint(Url origin_url, ServerAddress address, Connect connect,
                               std::size_t max_in_use, std::size_t max_idle)
    : origin(std::move(origin_url)),
      host_header(origin.origin().substr(origin.scheme.size() + 3)),
      server(std::move(address)),
      pool([this, connect = std::move(connect)] { return connect(server); }, max_in_use,
           max_idle) {}

HttpClient::HttpClient(asio::any_io_executor executor, const Url& origin, HttpOptions options,
                       std::shared_ptr<ServiceAdapter> adapter)
    : options_(std::move(options)),
      adapter_(std::move(adapter)),
      proxies_(options_.proxies.value_or(proxies_from_environment())),
      response_timeout_(options_.response_timeout.value_or(response_timeout_from_environment())),
      jitter_(full_jitter),
      connect_([executor](const ServerAddress& server) {
        return std::make_unique<Connection>(executor, server);
      }) {
  endpoint(origin);
  raise_open_file_limit();
}

HttpClient::HttpClient(std::string host_header, HttpOptions options,
                       ConnectionPool::Factory connect, Jitter jitter)
    : options_(std::move(options)),
      proxies_(options_.proxies.value_or(ProxyOptions{})),
      response_timeout_(options_.response_timeout.value_or(HttpOptions::default_response_timeout)),
      jitter_(std::move(jitter)),
      connect_([connect = std::move(connect)](const ServerAddress&) { return connect(); }) {
  endpoint(Url::parse("http://" + host_header));
}

HttpClient::Endpoint& HttpClient::endpoint(const Url& origin) {
  std::lock_guard lock(mutex_);
  const std::string key = origin.origin();
  if (home_ && home_->origin.origin() == key) return *home_;
  if (auto found = others_.find(key); found != others_.end()) return *found->second;
  ServerAddress server{origin.host, origin.port, nullptr, options_.verify_peer,
                       proxies_.route(origin)};
  if (origin.scheme == "https") {
    if (!tls_) tls_.emplace(make_tls_context(options_, key));
    server.tls = &*tls_;
  }
  auto made = std::make_unique<Endpoint>(origin, std::move(server), connect_,
                                         max_connections(options_),
                                         options_.max_idle_connections);
  Endpoint& result = *made;
  if (!home_) {
    home_ = std::move(made);
  } else {
    others_.emplace(key, std::move(made));
  }
  return result;
}

template <class Request>
asio::awaitable<std::optional<Failure>> HttpClient::attempt(Request& request,
                                                            Connection& connection,
                                                            const Endpoint& endpoint) {
  if (!connection.is_open()) {
    auto connecting = waits_.begin(ResponseWaits::Phase::connection, endpoint.host_header);
    auto failure = co_await connection.open(options_.connect_timeout);
    if (failure) co_return failure;
    connecting.end();
    connections_.fetch_add(1, std::memory_order_relaxed);
    if (connection.tls_resumed()) tls_resumed_.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::debug, [&] {
      // The client's TLS context serves every https endpoint; this one may be plain.
      const bool tls = endpoint.server.tls != nullptr;
      return "connected to " + endpoint.host_header +
             (tls ? (connection.tls_resumed() ? " (TLS, session resumed)" : " (TLS)") : "");
    });
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  connection.watch_responses({&waits_, &endpoint.host_header, response_timeout_});
  co_return co_await request.attempt(connection);
}

template <class Request>
asio::awaitable<std::optional<HttpClient::Outcome>> HttpClient::perform(Request& request,
                                                                        Endpoint& endpoint,
                                                                        const std::string& url) {
  const int max_attempts = 1 + std::max(options_.max_retries, 0);
  int attempts = 0;
  bool fresh = false;
  for (;;) {
    // A service's credentials are for its own server, not for one its redirects lead to.
    std::string credentials_trace;
    if (adapter_ && &endpoint == home_.get()) {
      auto credentials = co_await adapter_->authorize(request.head());
      credentials_trace = std::move(credentials.trace);
      request.set_credentials(std::move(credentials));
    } else {
      request.set_credentials({});
    }
    auto connection = co_await endpoint.pool.acquire(fresh);
    const bool reused = connection->is_open();
    std::optional<Failure> failure;
    std::exception_ptr error;
    const bool traced = log_enabled(LogLevel::trace);
    const std::string attempted =
        traced ? describe_attempt(request, endpoint.origin, credentials_trace) : std::string();
    const auto started = std::chrono::steady_clock::now();
    try {
      auto strand = connection->strand();
      auto work = attempt(request, *connection, endpoint);
      auto on_strand = async::run_on_strand(std::move(strand), std::move(work));
      failure = co_await std::move(on_strand);
    } catch (...) {
      error = std::current_exception();
    }
    if (traced) {
      const std::string outcome =
          failure ? failure->cause : "HTTP " + std::to_string(connection->last_status());
      log(LogLevel::trace, attempted + ": " + outcome + " in " +
                               seconds_text(std::chrono::steady_clock::now() - started));
    }
    endpoint.pool.release(std::move(connection));
    if (error) std::rethrow_exception(error);
    if (!failure) co_return std::nullopt;
    co_await throw_if_cancelled();
    if (adapter_ && &endpoint == home_.get() && failure->status != 0) {
      failure->target = request.head().target;
      adapter_->interpret(*failure);
    }

    // On a reused keep-alive connection two failures say nothing about this request: the server
    // closed the idle connection just as it was reused (the request never reached it), or an
    // earlier response left bytes behind that now read as garbage. The request is repeated at
    // once on a new connection and does not count as an attempt; there the failure counts.
    if (reused && (failure->before_response || failure->malformed)) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::debug, [&] {
        return url + ": " + failure->cause + " on a reused connection; repeating on a new one";
      });
      fresh = true;
      co_await prepare_repeat(request);
      continue;
    }
    fresh = false;
    ++attempts;
    if (!failure->transient || attempts >= max_attempts) {
      co_return Outcome{std::move(*failure), attempts};
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    auto delay = jitter_(backoff_cap(options_, attempts, is_throttling(*failure)));
    if (failure->status == 429 || failure->status == 503) {
      const auto asked = retry_after(failure->headers, std::chrono::system_clock::now());
      if (asked && *asked > delay) delay = *asked;
    }
    // At the default level: a slow load that is retrying should say so, not look hung.
    log(LogLevel::warning, [&] {
      return url + ": " + failure->cause + "; retrying in " + seconds_text(delay) + " (attempt " +
             std::to_string(attempts + 1) + " of " + std::to_string(max_attempts) + ")";
    });
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    if (auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable)); ec) {
      throw boost::system::system_error(ec);
    }
    co_await prepare_repeat(request);
  }
}

template <class Request>
asio::awaitable<void> HttpClient::perform(Request& request, const std::string& url) {
  auto outcome = co_await perform(request, *home_, url);
  if (outcome) throw_failure(url, outcome->failure, outcome->attempts);
}

template <class Request>
asio::awaitable<void> HttpClient::follow(Request& request, std::string_view target,
                                         const std::string& url) {
  Location at{home_.get(), std::string(target)};
  bool remembered = false;
  {
    std::lock_guard lock(mutex_);
    if (auto found = locations_.find(target); found != locations_.end()) {
      at = found->second;
      remembered = true;
    }
  }
  int redirects = 0;
  for (;;) {
    request.aim(at.target, at.endpoint->host_header);
    auto outcome = co_await perform(request, *at.endpoint, url);
    if (!outcome) break;
    const Failure& failure = outcome->failure;
    if (remembered && is_stale_location(failure)) {
      log(LogLevel::debug, [&] {
        return url + ": " + failure.cause + " from its last location; starting over";
      });
      at = {home_.get(), std::string(target)};
      remembered = false;
      continue;
    }
    if (failure.location.empty()) throw_failure(url, failure, outcome->attempts);
    const std::string location =
        resolve_location(at.endpoint->origin.origin(), at.target, failure.location);
    // Where a redirect leads may be signed too (a presigned S3 or CDN URL): messages show it
    // without its query.
    const std::string next = redact_query(location);
    if (++redirects > options_.max_redirects) {
      throw StorageError(url,
                         "too many redirects: stopped after " +
                             std::to_string(options_.max_redirects) + ", the next to " + next,
                         false);
    }
    Url to;
    try {
      to = Url::parse(location);
    } catch (const InvalidArgument& error) {
      throw StorageError(url, "cannot follow the redirect to " + next + ": " + error.what(),
                         false);
    }
    if (to.scheme != "http" && to.scheme != "https") {
      throw StorageError(url, "cannot follow the redirect to " + next + ": not http or https",
                         false);
    }
    if (at.endpoint->origin.scheme == "https" && to.scheme == "http") {
      throw StorageError(url, "refusing the redirect from https to " + next, false);
    }
    if (adds_a_slash(at.endpoint->origin, at.target, to)) {
      // What a web server answers for a directory named without its slash: its index page would
      // be read as the object.
      throw InvalidArgument(url + ": a directory (the server redirects to " + next +
                            "); add a trailing slash to stream what it holds");
    }
    log(LogLevel::debug, [&] {
      return url + ": following HTTP " + std::to_string(failure.status) + " to " + next;
    });
    at = {&endpoint(to), target_of(to)};
    remembered = false;
  }
  std::lock_guard lock(mutex_);
  if (at.endpoint == home_.get() && at.target == target) {
    if (auto found = locations_.find(target); found != locations_.end()) locations_.erase(found);
  } else {
    locations_.insert_or_assign(std::string(target), std::move(at));
  }
}

asio::awaitable<std::uint64_t> HttpClient::content_length(std::string_view target,
                                                          const std::string& url,
                                                          ResponseVersion& version) {
  HeadRequest request(target, home_->host_header, options_.read_timeout);
  std::exception_ptr refused;
  try {
    co_await follow(request, target, url);
    version = request.version();
    co_return request.size();
  } catch (const StorageError& error) {
    if (error.transient() || !(error.cause().starts_with("HTTP 403") ||
                               error.cause().starts_with("HTTP 405"))) {
      throw;
    }
    refused = std::current_exception();
  }
  // Presigned URLs, where CDNs and hubs redirect to, are signed for GET and refuse HEAD (403),
  // and some servers do not implement HEAD (405): the first byte by GET says the size in its
  // Content-Range. A GET refused too fails with its own answer, which names the cause.
  std::byte first_byte[1];
  RangeRequest probe(target, home_->host_header, 0, std::span<std::byte>(first_byte),
                     options_.read_timeout);
  co_await follow(probe, target, url);
  if (!probe.object_size()) std::rethrow_exception(refused);
  version = probe.version();
  co_return *probe.object_size();
}

asio::awaitable<void> HttpClient::read_range(std::string_view target, const std::string& url,
                                             std::uint64_t offset,
                                             std::span<std::byte> destination,
                                             ResponseVersion& version) {
  RangeRequest request(target, home_->host_header, offset, destination, options_.read_timeout);
  request.pin(version);
  request.count_into(bytes_);
  co_await follow(request, target, url);
  version = request.version();
  if (request.range_ignored() && !warned_range_ignored_.exchange(true)) {
    log(LogLevel::warning,
        url +
            ": the server ignores Range requests and sends whole objects; every read "
            "transfers the bytes before its range too");
  }
}

asio::awaitable<std::string> HttpClient::get_text(std::string_view target, const std::string& url,
                                                 std::size_t max_size) {
  TextRequest request(target, home_->host_header, max_size, options_.read_timeout);
  co_await perform(request, url);
  co_return std::move(request.response().body);
}

asio::awaitable<TextResponse> HttpClient::send(std::string_view target, const std::string& url,
                                               std::size_t max_size, RequestBody body) {
  TextRequest request(target, home_->host_header, max_size, options_.read_timeout, body);
  co_await perform(request, url);
  co_return std::move(request.response());
}

StoreStats HttpClient::stats() const {
  StoreStats stats;
  stats.requests = requests_.load(std::memory_order_relaxed);
  stats.bytes = bytes_.load(std::memory_order_relaxed);
  stats.retries = retries_.load(std::memory_order_relaxed);
  stats.connections = connections_.load(std::memory_order_relaxed);
  stats.tls_resumed = tls_resumed_.load(std::memory_order_relaxed);
  stats.io_mode = home_->origin.scheme == "https" ? "https" : "http";
  if (const auto longest = waits_.longest()) {
    stats.waiting_for = longest->what;
    stats.waiting_seconds = longest->waited.count();
  }
  return stats;
}

}  // namespace tensorstream
