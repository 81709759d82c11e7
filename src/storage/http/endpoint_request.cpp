#include "storage/http/endpoint_request.hpp"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/system_error.hpp>
#include <memory>
#include <mutex>

#include "async/run_on_strand.hpp"
#include "storage/http/tls_context.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::size_t body_limit = 1 << 20;

template <class Stream>
asio::awaitable<EndpointResponse> exchange(Stream& stream,
                                           http::request<http::string_body>& request) {
  co_await http::async_write(stream, request, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit);
  co_await http::async_read(stream, buffer, parser, asio::use_awaitable);
  // The connection is not reused, so it needs no orderly shutdown: closing it is enough.
  co_return EndpointResponse{parser.get().result_int(), std::string(parser.get().reason()),
                             std::move(parser.get().body())};
}

// Resolves, connects and exchanges, without a deadline of its own: the caller's cancels it.
asio::awaitable<EndpointResponse> send(Url parsed, http::request<http::string_body> request,
                                       EndpointResolver resolve, std::string request_text) {
  const auto executor = co_await asio::this_coro::executor;
  try {
    auto resolving = resolve(parsed.host, std::to_string(parsed.port));
    const auto endpoints = co_await std::move(resolving);
    if (parsed.scheme == "http") {
      beast::tcp_stream stream(executor);
      co_await stream.async_connect(endpoints, asio::use_awaitable);
      co_return co_await exchange(stream, request);
    }
    asio::ssl::context context = make_tls_context(HttpOptions{}, parsed.origin());
    beast::ssl_stream<beast::tcp_stream> stream(executor, context);
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::use_awaitable);
    beast::error_code not_an_ip;
    asio::ip::make_address(parsed.host, not_an_ip);
    // SNI carries host names only; an IP literal is not allowed there (RFC 6066).
    if (not_an_ip) SSL_set_tlsext_host_name(stream.native_handle(), parsed.host.c_str());
    stream.set_verify_callback(asio::ssl::host_name_verification(parsed.host));
    co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_return co_await exchange(stream, request);
  } catch (const boost::system::system_error& error) {
    // Cancelled by the deadline or by the caller: endpoint_request() tells which.
    if (error.code() == asio::error::operation_aborted) throw;
    throw EndpointError(request_text + ": " + error.code().message());
  } catch (const InvalidArgument& error) {
    throw EndpointError(error.what());
  }
}

// send() raced against one deadline timer, on the strand both run on.
asio::awaitable<EndpointResponse> send_within(Url parsed, http::request<http::string_body> request,
                                              EndpointResolver resolve, std::string request_text,
                                              std::chrono::milliseconds timeout) {
  const auto strand = co_await asio::this_coro::executor;
  asio::steady_timer deadline(strand, timeout);
  auto sending = send(std::move(parsed), std::move(request), std::move(resolve), request_text);
  auto race = asio::experimental::make_parallel_group(
      asio::co_spawn(strand, std::move(sending), asio::deferred),
      deadline.async_wait(asio::deferred));
  auto first_done = race.async_wait(asio::experimental::wait_for_one(), asio::deferred);
  auto [order, failure, response, expired] = co_await std::move(first_done);
  // Whatever error the interrupted operation reported (a TLS layer may not say
  // operation_aborted), the caller's cancellation is a cancellation.
  const auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  if (order[0] == 1 && !expired) {
    throw EndpointError(request_text + ": timed out after " + std::to_string(timeout.count()) +
                        " ms");
  }
  if (failure) std::rethrow_exception(failure);
  co_return std::move(response);
}

}  // namespace

asio::awaitable<asio::ip::tcp::resolver::results_type> system_resolve(std::string host,
                                                                      std::string port) {
  // Shared with the lookup's completion, which may come after this coroutine was cancelled.
  struct Lookup {
    explicit Lookup(const asio::any_io_executor& executor) : resolver(executor) {}
    asio::ip::tcp::resolver resolver;
    std::mutex mutex;
    bool done = false;
    boost::system::error_code error;
    asio::ip::tcp::resolver::results_type results;
    async::ConditionVariable finished;
  };
  const auto lookup = std::make_shared<Lookup>(co_await asio::this_coro::executor);
  lookup->resolver.async_resolve(
      host, port,
      [lookup](boost::system::error_code error, asio::ip::tcp::resolver::results_type results) {
        {
          std::lock_guard lock(lookup->mutex);
          lookup->done = true;
          lookup->error = error;
          lookup->results = std::move(results);
        }
        lookup->finished.notify_all();
      });
  std::unique_lock lock(lookup->mutex);
  while (!lookup->done) co_await lookup->finished.wait(lock);
  if (lookup->error) throw boost::system::system_error(lookup->error);
  co_return lookup->results;
}

asio::awaitable<EndpointResponse> endpoint_request(
    http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, EndpointResolver resolve) {
  std::string request_text = std::string(http::to_string(method)) + " " + url;
  Url parsed;
  try {
    parsed = Url::parse(url);
  } catch (const InvalidArgument& error) {
    throw EndpointError(error.what());
  }
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    throw EndpointError(url + ": not an http:// or https:// URL");
  }

  http::request<http::string_body> request(
      method, parsed.query.empty() ? parsed.path : parsed.path + "?" + parsed.query, 11);
  const bool default_port = parsed.port == (parsed.scheme == "https" ? 443 : 80);
  request.set(http::field::host,
              default_port ? parsed.host : parsed.host + ":" + std::to_string(parsed.port));
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();

  // The request and its deadline get a strand of their own, whatever executor the caller runs
  // on: the deadline cancels the request, and cancellation must come from the strand running
  // the operation it cancels. run_on_strand delivers the caller's cancellation there too.
  const auto strand = asio::make_strand(co_await asio::this_coro::executor);
  auto bounded = send_within(std::move(parsed), std::move(request), std::move(resolve),
                             std::move(request_text), timeout);
  co_return co_await async::run_on_strand(strand, std::move(bounded));
}

asio::awaitable<EndpointResponse> endpoint_request(
    http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, int attempts) {
  constexpr std::chrono::milliseconds first_pause{100};
  for (int attempt = 1;; ++attempt) {
    std::exception_ptr failure;
    EndpointResponse response;
    try {
      response = co_await endpoint_request(method, url, headers, body, timeout);
    } catch (const EndpointError&) {
      failure = std::current_exception();
    }
    const bool transient = failure || response.status == 408 || response.status == 429 ||
                           response.status >= 500;
    if (!transient || attempt >= attempts) {
      if (failure) std::rethrow_exception(failure);
      co_return response;
    }
    asio::steady_timer pause(co_await asio::this_coro::executor, first_pause * attempt);
    co_await pause.async_wait(asio::use_awaitable);
  }
}

std::string describe_status(http::verb method, const std::string& url,
                            const EndpointResponse& response) {
  constexpr std::size_t excerpt = 200;
  std::string text = std::string(http::to_string(method)) + " " + url + ": HTTP " +
                     std::to_string(response.status) + " " + response.reason;
  if (!response.body.empty()) text += ": " + response.body.substr(0, excerpt);
  return text;
}

}  // namespace tensorstream
