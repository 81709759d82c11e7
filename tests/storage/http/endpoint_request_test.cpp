// Requests to credentials endpoints: one deadline bounds the whole request, name resolution
// included, and cancelling the caller is a cancellation, not an EndpointError.

#include "storage/http/endpoint_request.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/s3_fake_endpoint.hpp"
#include "support/run_task.hpp"
#include "tensorstream/async/condition_variable.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;
using s3::testing::FakeEndpoint;

// A resolver that never answers, as a DNS server that drops queries; it records what it was
// asked and ends only when cancelled.
class SilentResolver {
 public:
  EndpointResolver resolver() {
    return [this](std::string host, std::string port) { return resolve(host + ":" + port); };
  }

  std::vector<std::string> asked;

 private:
  asio::awaitable<asio::ip::tcp::resolver::results_type> resolve(std::string query) {
    asked.push_back(std::move(query));
    for (;;) co_await never_.wait();
  }

  async::ConditionVariable never_;
};

// What a request ended with: "response: STATUS", "EndpointError: MESSAGE" or
// "system_error: MESSAGE".
std::string outcome_of(std::exception_ptr error, const EndpointResponse& response) {
  if (!error) return "response: " + std::to_string(response.status);
  try {
    std::rethrow_exception(error);
  } catch (const EndpointError& e) {
    return std::string("EndpointError: ") + e.what();
  } catch (const boost::system::system_error& e) {
    return "system_error: " + e.code().message();
  }
}

// Emits `cancel` once `condition` holds, looking every millisecond.
asio::awaitable<void> cancel_when(std::shared_ptr<asio::cancellation_signal> cancel,
                                  std::function<bool()> condition) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  while (!condition()) {
    pause.expires_after(1ms);
    co_await pause.async_wait(asio::use_awaitable);
  }
  cancel->emit(asio::cancellation_type::terminal);
}

// Runs `request` on a fresh io_context, cancelling it once `condition` holds; returns its
// outcome.
std::string run_cancelled(asio::awaitable<EndpointResponse> request,
                          std::function<bool()> condition) {
  asio::io_context io;
  std::string outcome;
  auto cancel = std::make_shared<asio::cancellation_signal>();
  asio::co_spawn(io, std::move(request),
                 asio::bind_cancellation_slot(
                     cancel->slot(), [&outcome](std::exception_ptr error, EndpointResponse r) {
                       outcome = outcome_of(error, r);
                     }));
  asio::co_spawn(io, cancel_when(cancel, std::move(condition)), asio::detached);
  io.run();
  return outcome;
}

// Answers nothing and keeps the connection open.
FakeEndpoint::Reply stall(const FakeEndpoint::Request&) { return {200, "", true}; }

// endpoint_request() takes its strings by reference: they must outlive the coroutine.
const std::string unresolvable = "http://metadata.invalid/token";
const std::vector<std::pair<std::string, std::string>> no_headers;
const std::string no_body;

TEST(EndpointRequest, DeadlineCoversNameResolution) {
  SilentResolver dns;
  asio::io_context io;
  auto request =
      endpoint_request(http::verb::get, unresolvable, no_headers, no_body, 50ms, dns.resolver());
  try {
    testing::run_task(io, std::move(request));
    ADD_FAILURE() << "got a response";
  } catch (const EndpointError& error) {
    EXPECT_STREQ(error.what(), "GET http://metadata.invalid/token: timed out after 50 ms");
  }
  EXPECT_EQ(dns.asked, std::vector<std::string>{"metadata.invalid:80"});
}

TEST(EndpointRequest, CancelledWhileResolvingIsACancellation) {
  SilentResolver dns;
  auto request =
      endpoint_request(http::verb::get, unresolvable, no_headers, no_body, 1h, dns.resolver());
  EXPECT_EQ(run_cancelled(std::move(request), [&] { return !dns.asked.empty(); }),
            "system_error: Operation canceled");
}

TEST(EndpointRequest, CancelledWhileWaitingForTheResponseIsACancellation) {
  FakeEndpoint endpoint(stall);
  const std::string url = endpoint.url() + "/token";
  auto request = endpoint_request(http::verb::get, url, no_headers, no_body, 1h);
  EXPECT_EQ(run_cancelled(std::move(request), [&] { return !endpoint.requests().empty(); }),
            "system_error: Operation canceled");
}

TEST(EndpointRequest, CancellationEndsTheRetries) {
  FakeEndpoint endpoint(stall);
  const std::string url = endpoint.url() + "/token";
  auto request = endpoint_request(http::verb::get, url, no_headers, no_body, 1h, 3);
  EXPECT_EQ(run_cancelled(std::move(request), [&] { return !endpoint.requests().empty(); }),
            "system_error: Operation canceled");
  EXPECT_EQ(endpoint.requests().size(), 1u);
}

TEST(EndpointRequest, DeadlineCoversTheExchange) {
  FakeEndpoint endpoint(stall);
  const std::string url = endpoint.url() + "/token";
  try {
    testing::run_task(endpoint_request(http::verb::put, url, no_headers, no_body, 100ms));
    ADD_FAILURE() << "got a response";
  } catch (const EndpointError& error) {
    EXPECT_EQ(error.what(), "PUT " + url + ": timed out after 100 ms");
  }
}

TEST(EndpointRequest, AnswerArrivesThroughTheSystemResolver) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) { return FakeEndpoint::Reply{204, ""}; });
  const std::string url =
      "http://localhost:" + endpoint.url().substr(endpoint.url().rfind(':') + 1) + "/";
  const auto response =
      testing::run_task(endpoint_request(http::verb::get, url, no_headers, no_body, 10s));
  EXPECT_EQ(response.status, 204u);
}

}  // namespace
}  // namespace tensorstream
