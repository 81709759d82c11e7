#include "storage/http/endpoint_request.hpp"

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
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

#include "storage/http/tls_context.hpp"
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

}  // namespace

asio::awaitable<EndpointResponse> endpoint_request(
    http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout) {
  const std::string request_text = std::string(http::to_string(method)) + " " + url;
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

  const auto executor = co_await asio::this_coro::executor;
  try {
    asio::ip::tcp::resolver resolver(executor);
    const auto endpoints = co_await resolver.async_resolve(parsed.host, std::to_string(parsed.port),
                                                           asio::use_awaitable);
    if (parsed.scheme == "http") {
      beast::tcp_stream stream(executor);
      // One deadline for connecting, writing and reading together.
      stream.expires_after(timeout);
      co_await stream.async_connect(endpoints, asio::use_awaitable);
      co_return co_await exchange(stream, request);
    }
    asio::ssl::context context = make_tls_context(HttpOptions{}, parsed.origin());
    beast::ssl_stream<beast::tcp_stream> stream(executor, context);
    beast::get_lowest_layer(stream).expires_after(timeout);
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::use_awaitable);
    beast::error_code not_an_ip;
    asio::ip::make_address(parsed.host, not_an_ip);
    // SNI carries host names only; an IP literal is not allowed there (RFC 6066).
    if (not_an_ip) SSL_set_tlsext_host_name(stream.native_handle(), parsed.host.c_str());
    stream.set_verify_callback(asio::ssl::host_name_verification(parsed.host));
    co_await stream.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    co_return co_await exchange(stream, request);
  } catch (const boost::system::system_error& error) {
    const std::string cause = error.code() == beast::error::timeout
                                  ? "timed out after " + std::to_string(timeout.count()) + " ms"
                                  : error.code().message();
    throw EndpointError(request_text + ": " + cause);
  } catch (const InvalidArgument& error) {
    throw EndpointError(error.what());
  }
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
