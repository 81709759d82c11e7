// The HTTP exchange below the socket: requests run over Beast's in-memory test stream against a
// small in-memory server, with a fail counter that fails the N-th stream operation for every N
// and reads that deliver one byte at a time, the way Beast tests its own parser. Retries run
// through HttpClient with a jitter that records the backoff caps and waits for nothing, and read
// timeouts run on a clock the tests advance by hand.

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/_experimental/test/fail_count.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "storage/http/backoff.hpp"
#include "storage/http/connection.hpp"
#include "storage/http/head_request.hpp"
#include "storage/http/http_client.hpp"
#include "storage/http/range_request.hpp"
#include "storage/http/text_request.hpp"
#include "support/byte_range.hpp"
#include "support/use_tuple.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::milliseconds;
using testing::use_tuple;

constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

std::string pattern(std::size_t size) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return bytes;
}

/// What the in-memory server answers to one request, and whether it closes the connection.
struct Reply {
  std::string text;
  bool close = false;
};

using Responder = std::function<Reply(const http::request<http::empty_body>&)>;

/// A well-behaved server's answer: 206 for a Range inside the object, 416 past it, 200 for a
/// GET without Range, the size for HEAD.
Reply serve_object(const std::string& object, const http::request<http::empty_body>& request) {
  const std::string size = std::to_string(object.size());
  if (request.method() == http::verb::head) {
    return {"HTTP/1.1 200 OK\r\nContent-Length: " + size + "\r\n\r\n"};
  }
  const auto range = testing::parse_range(request[http::field::range], object.size());
  if (!range) return {"HTTP/1.1 200 OK\r\nContent-Length: " + size + "\r\n\r\n" + object};
  if (range->first >= object.size()) {
    return {"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + size +
            "\r\nContent-Length: 0\r\n\r\n"};
  }
  const auto body = object.substr(range->first, range->last - range->first + 1);
  return {"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(range->first) +
          "-" + std::to_string(range->last) + "/" + size +
          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body};
}

/// One in-memory connection: the client's end goes into a Connection, the server's end is
/// served by a coroutine that answers with `respond`. The client's stream fails its operation
/// number `fail_at` (counted from 0) with `fail_with`, and reads at most `read_size` bytes at a
/// time.
class Link {
 public:
  Link(asio::io_context& io, Responder respond, std::size_t fail_at, std::size_t read_size,
       beast::error_code fail_with = beast::test::error::test_failure)
      : strand_(asio::make_strand(io.get_executor())),
        fail_(fail_at, fail_with),
        server_(io.get_executor()),
        respond_(std::move(respond)) {
    Connection::MemoryStream client(io, fail_);
    client.connect(server_);
    client.read_size(read_size);
    client_.emplace(std::move(client));
  }

  /// Starts serving; the server coroutine keeps the link alive.
  static std::shared_ptr<Link> start(
      asio::io_context& io, Responder respond, std::size_t fail_at = never,
      std::size_t read_size = never,
      beast::error_code fail_with = beast::test::error::test_failure) {
    auto link = std::make_shared<Link>(io, std::move(respond), fail_at, read_size, fail_with);
    asio::co_spawn(io, serve(link), asio::detached);
    return link;
  }

  /// The connection over the client's end, its timeouts on `stall_timer` if given; call once.
  std::unique_ptr<Connection> connection(StallTimer* stall_timer = nullptr) {
    auto connection = std::make_unique<Connection>(strand_, std::move(*client_), stall_timer);
    client_.reset();
    return connection;
  }

  /// The Range header of every request the server read ("" for none).
  const std::vector<std::string>& ranges() const { return ranges_; }

 private:
  static asio::awaitable<void> serve(std::shared_ptr<Link> link) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::empty_body> request;
      auto [ec, read] = co_await http::async_read(link->server_, buffer, request, use_tuple);
      if (ec) co_return;
      link->ranges_.emplace_back(request[http::field::range]);
      const Reply reply = link->respond_(request);
      auto [write_error, written] =
          co_await asio::async_write(link->server_, asio::buffer(reply.text), use_tuple);
      if (write_error || reply.close) {
        link->server_.close();
        co_return;
      }
    }
  }

  Connection::Strand strand_;
  beast::test::fail_count fail_;
  Connection::MemoryStream server_;
  std::optional<Connection::MemoryStream> client_;
  Responder respond_;
  std::vector<std::string> ranges_;
};

/// Whether `future` holds its result (or exception) already; never waits.
template <class T>
bool is_ready(const std::future<T>& future) {
  return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

/// Runs `attempt` on the connection's strand until it finishes, then lets the server see the
/// connection end.
template <class Request>
std::optional<Failure> run_attempt(asio::io_context& io, Connection& connection, Request& request) {
  auto future = asio::co_spawn(connection.strand(), request.attempt(connection), asio::use_future);
  io.restart();
  while (!is_ready(future)) io.run_one();
  auto failure = future.get();
  if (connection.is_open()) connection.close();
  io.restart();
  io.run();
  return failure;
}

std::span<std::byte> bytes_of(std::string& text) { return std::as_writable_bytes(std::span(text)); }

constexpr std::size_t object_size = 1000;
constexpr std::uint64_t range_offset = 123;
constexpr std::size_t range_size = 456;

TEST(HttpExchange, RangeReadFailsCleanlyAtEveryOperationAndResumesWhereItStopped) {
  const std::string object = pattern(object_size);
  const std::string expected = object.substr(range_offset, range_size);
  const auto respond = [&](const auto& request) { return serve_object(object, request); };
  for (const std::size_t read_size : {std::size_t{1}, std::size_t{7}, never}) {
    bool succeeded = false;
    std::size_t fail_at = 0;
    for (; !succeeded && fail_at < 10'000; ++fail_at) {
      SCOPED_TRACE("read size " + std::to_string(read_size) + ", failing operation " +
                   std::to_string(fail_at));
      asio::io_context io;
      std::string destination(range_size, '\0');
      RangeRequest request("/object", "host", range_offset, bytes_of(destination),
                           milliseconds(1000));
      auto failing = Link::start(io, respond, fail_at, read_size);
      auto connection = failing->connection();
      const auto failure = run_attempt(io, *connection, request);
      if (!failure) {
        succeeded = true;
        EXPECT_EQ(destination, expected);
        continue;
      }
      EXPECT_TRUE(failure->transient) << failure->cause;
      EXPECT_FALSE(failure->cause.empty());
      EXPECT_FALSE(connection->reusable());
      const auto delivered = request.delivered();
      ASSERT_LE(delivered, range_size);
      EXPECT_EQ(destination.substr(0, delivered), expected.substr(0, delivered));

      // The next attempt asks for exactly the bytes still missing.
      auto clean = Link::start(io, respond, never, read_size);
      auto second = clean->connection();
      ASSERT_FALSE(run_attempt(io, *second, request));
      EXPECT_EQ(destination, expected);
      ASSERT_EQ(clean->ranges().size(), 1u);
      EXPECT_EQ(clean->ranges()[0], "bytes=" + std::to_string(range_offset + delivered) + "-" +
                                        std::to_string(range_offset + range_size - 1));
    }
    EXPECT_TRUE(succeeded);
    // One byte per read means hundreds of operations, each of which failed once above.
    if (read_size == 1) {
      EXPECT_GT(fail_at, range_size);
    }
  }
}

TEST(HttpExchange, StalledBodyIsATransientFailureNamingTheProgress) {
  const std::string object = pattern(object_size);
  const auto respond = [&](const auto& request) { return serve_object(object, request); };
  asio::io_context io;
  std::string destination(range_size, '\0');
  RangeRequest request("/object", "host", range_offset, bytes_of(destination), milliseconds(1234));
  // Operation 0 writes the request, 1 to 100 read the header and the first body bytes.
  auto link = Link::start(io, respond, 100, 1, beast::error::timeout);
  auto connection = link->connection();
  const auto failure = run_attempt(io, *connection, request);
  ASSERT_TRUE(failure);
  EXPECT_TRUE(failure->transient);
  EXPECT_NE(failure->cause.find("body stalled after " + std::to_string(request.delivered()) +
                                " of " + std::to_string(range_size) + " bytes"),
            std::string::npos)
      << failure->cause;
  EXPECT_NE(failure->cause.find("no data for 1234 ms"), std::string::npos) << failure->cause;
}

/// A stall timer on a clock that moves only when the test moves it.
class ManualStallTimer final : public StallTimer {
 public:
  void arm(milliseconds timeout, std::function<void()> expired) override {
    deadline_ = now_ + timeout;
    armed_for_ = timeout;
    ++arms_;
    expired_ = std::move(expired);
  }
  void disarm() override { expired_ = nullptr; }

  /// Moves the clock on by `elapsed`, and fires the deadline if it is reached.
  void advance(milliseconds elapsed) {
    now_ += elapsed;
    if (expired_ && now_ >= deadline_) std::exchange(expired_, nullptr)();
  }
  bool armed() const { return expired_ != nullptr; }
  /// The timeout of the deadline armed last.
  milliseconds armed_for() const { return armed_for_; }
  /// How many deadlines were armed: one per stream operation.
  std::size_t arms() const { return arms_; }

 private:
  milliseconds now_{0};
  milliseconds deadline_{0};
  milliseconds armed_for_{0};
  std::size_t arms_ = 0;
  std::function<void()> expired_;
};

/// Runs every handler that is ready, and returns once none is.
void run_ready(asio::io_context& io) {
  io.restart();
  while (io.poll() > 0) {
  }
}

/// Sends the header and the first `sent` bytes of the requested range, then nothing more,
/// keeping the connection open.
Reply stop_sending_after(const std::string& object, const http::request<http::empty_body>& request,
                         std::size_t sent) {
  Reply reply = serve_object(object, request);
  reply.text.resize(reply.text.find("\r\n\r\n") + 4 + sent);
  return reply;
}

TEST(HttpExchange, ABodyThatStopsArrivingIsCutOffAtTheReadTimeout) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  ManualStallTimer clock;
  std::string destination(range_size, '\0');
  RangeRequest request("/object", "host", range_offset, bytes_of(destination), milliseconds(1234));
  auto link = Link::start(io, [&](const auto& r) { return stop_sending_after(object, r, 100); });
  auto connection = link->connection(&clock);
  auto attempt = asio::co_spawn(connection->strand(), request.attempt(*connection), asio::use_future);
  run_ready(io);
  ASSERT_FALSE(is_ready(attempt));
  EXPECT_EQ(request.delivered(), 100u);
  ASSERT_TRUE(clock.armed());
  EXPECT_EQ(clock.armed_for(), milliseconds(1234));

  clock.advance(milliseconds(1233));
  run_ready(io);
  ASSERT_FALSE(is_ready(attempt));

  clock.advance(milliseconds(1));
  run_ready(io);
  ASSERT_TRUE(is_ready(attempt));
  const auto failure = attempt.get();
  ASSERT_TRUE(failure);
  EXPECT_TRUE(failure->transient);
  EXPECT_NE(failure->cause.find("body stalled after 100 of 456 bytes"), std::string::npos)
      << failure->cause;
  EXPECT_NE(failure->cause.find("no data for 1234 ms"), std::string::npos) << failure->cause;
  EXPECT_FALSE(connection->is_open());
  EXPECT_FALSE(connection->reusable());
}

TEST(HttpExchange, EveryByteThatArrivesRestartsTheReadTimeout) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  ManualStallTimer clock;
  std::string destination(range_size, '\0');
  RangeRequest request("/object", "host", range_offset, bytes_of(destination), milliseconds(1000));
  auto link = Link::start(io, [&](const auto& r) { return serve_object(object, r); }, never, 1);
  auto connection = link->connection(&clock);
  auto attempt = asio::co_spawn(connection->strand(), request.attempt(*connection), asio::use_future);
  // One byte per read, and 999 ms pass in each read: far beyond 1000 ms in all, never 1000 ms
  // without a byte.
  std::size_t reads = 0;
  for (int step = 0; !is_ready(attempt); ++step) {
    ASSERT_LT(step, 100'000);
    const std::size_t arms = clock.arms();
    io.restart();
    io.run_one();
    if (clock.arms() != arms) {
      ++reads;
      clock.advance(milliseconds(999));
    }
  }
  EXPECT_FALSE(attempt.get());
  EXPECT_EQ(destination, object.substr(range_offset, range_size));
  EXPECT_GT(reads, range_size);
}

struct StatusCase {
  std::string reply;
  std::string cause;
  bool transient;
};

TEST(HttpExchange, StatusAndHeaderChecksGiveTheirCauseAtAnyReadSize) {
  const std::string body(range_size, 'x');
  const std::string length = "Content-Length: " + std::to_string(range_size) + "\r\n";
  const std::vector<StatusCase> cases = {
      {"HTTP/1.1 503 Slow Down\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nslow down",
       "HTTP 503 Service Unavailable: slow down", true},
      {"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", "HTTP 403 Forbidden", false},
      {"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */100\r\nContent-Length: "
       "0\r\n\r\n",
       "(requested bytes 123-578 of an object of 100 bytes)", false},
      {"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 124-579/1000\r\n" + length + "\r\n" +
           body,
       "Content-Range 'bytes 124-579/1000' does not match the requested bytes 123-578", false},
      {"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 123-500/501\r\n" + length + "\r\n",
       "object is 501 bytes long; requested bytes 123-578", false},
      {"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 123-578/1000\r\nContent-Length: "
       "10\r\n\r\n",
       "Content-Length 10 does not match the requested bytes 123-578", false},
      {"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 123-578/1000\r\n" + length + "\r\n" +
           body.substr(0, 100),
       "truncated body: connection closed after 100 of 456 bytes", true},
      {"<?xml version=\"1.0\"?><Error/>\r\n\r\n", "malformed response", false},
  };
  for (const auto& item : cases) {
    for (const std::size_t read_size : {std::size_t{1}, never}) {
      SCOPED_TRACE(item.reply.substr(0, 40) + ", read size " + std::to_string(read_size));
      asio::io_context io;
      std::string destination(range_size, '\0');
      RangeRequest request("/object", "host", range_offset, bytes_of(destination),
                           milliseconds(1000));
      auto link = Link::start(
          io,
          [&](const auto&) {
            return Reply{item.reply, true};
          },
          never, read_size);
      auto connection = link->connection();
      const auto failure = run_attempt(io, *connection, request);
      ASSERT_TRUE(failure);
      EXPECT_NE(failure->cause.find(item.cause), std::string::npos) << failure->cause;
      EXPECT_EQ(failure->transient, item.transient) << failure->cause;
    }
  }
}

TEST(HttpExchange, HeadAndTextRequestsFailCleanlyAtEveryOperation) {
  const std::string object = pattern(object_size);
  const auto respond = [&](const auto& request) { return serve_object(object, request); };
  for (const std::size_t read_size : {std::size_t{1}, never}) {
    bool head_done = false;
    bool text_done = false;
    for (std::size_t fail_at = 0; (!head_done || !text_done) && fail_at < 10'000; ++fail_at) {
      SCOPED_TRACE("failing operation " + std::to_string(fail_at));
      asio::io_context io;
      HeadRequest head("/object", "host", milliseconds(1000));
      auto head_link = Link::start(io, respond, fail_at, read_size);
      auto head_connection = head_link->connection();
      if (const auto failure = run_attempt(io, *head_connection, head)) {
        EXPECT_TRUE(failure->transient) << failure->cause;
      } else {
        head_done = true;
        EXPECT_EQ(head.size(), object_size);
      }
      TextRequest text("/object", "host", object_size, milliseconds(1000));
      auto text_link = Link::start(io, respond, fail_at, read_size);
      auto text_connection = text_link->connection();
      if (const auto failure = run_attempt(io, *text_connection, text)) {
        EXPECT_TRUE(failure->transient) << failure->cause;
      } else {
        text_done = true;
        EXPECT_EQ(text.response().body, object);
      }
    }
    EXPECT_TRUE(head_done && text_done);
  }
}

/// An HttpClient whose connections are in-memory links answering with `respond`, and whose
/// backoff records its caps and waits for nothing.
class MemoryClient {
 public:
  MemoryClient(asio::io_context& io, Responder respond, HttpOptions options = {},
               StallTimer* stall_timer = nullptr)
      : io_(io),
        respond_(std::move(respond)),
        client_(
            "host", options,
            [this, stall_timer] {
              links_.push_back(Link::start(io_, respond_));
              return links_.back()->connection(stall_timer);
            },
            [this](milliseconds cap) {
              caps_.push_back(cap);
              return milliseconds(0);
            }) {}

  HttpClient& client() { return client_; }
  const std::vector<milliseconds>& caps() const { return caps_; }
  std::size_t connections() const { return links_.size(); }

  template <class T>
  T run(asio::awaitable<T> task) {
    auto future = asio::co_spawn(io_, std::move(task), asio::use_future);
    io_.restart();
    while (!is_ready(future)) io_.run_one();
    return future.get();
  }

 private:
  asio::io_context& io_;
  Responder respond_;
  std::vector<std::shared_ptr<Link>> links_;
  std::vector<milliseconds> caps_;
  HttpClient client_;
};

// Fails the first `failures` requests with `status`, then serves `object`.
Responder failing_first(const std::string& object, int failures, unsigned status) {
  auto count = std::make_shared<int>(0);
  return [&object, failures, status, count](const auto& request) {
    if ((*count)++ < failures) {
      return Reply{"HTTP/1.1 " + std::to_string(status) + " Failed\r\nContent-Length: 0\r\n\r\n"};
    }
    return serve_object(object, request);
  };
}

// The coroutines keep a reference to the URL they name in errors.
const std::string url = "mem://object";

std::vector<milliseconds> caps(std::initializer_list<long> values) {
  std::vector<milliseconds> result;
  for (const long value : values) result.emplace_back(value);
  return result;
}

TEST(HttpClientRetries, BackoffCapsDoubleFromTheBaseWithoutSleeping) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  MemoryClient memory(io, failing_first(object, 4, 500));
  std::string destination(range_size, '\0');
  ResponseVersion version;
  auto read = memory.client().read_range("/object", url, range_offset, bytes_of(destination), version);
  memory.run(std::move(read));
  EXPECT_EQ(destination, object.substr(range_offset, range_size));
  EXPECT_EQ(memory.caps(), caps({100, 200, 400, 800}));
  EXPECT_EQ(memory.client().stats().retries, 4u);
}

TEST(HttpClientRetries, ThrottlingBacksOffFromTheLargerBase) {
  const std::string object = pattern(object_size);
  for (const unsigned status : {429u, 503u}) {
    asio::io_context io;
    MemoryClient memory(io, failing_first(object, 3, status));
    ResponseVersion version;
    auto size = memory.client().content_length("/object", url, version);
    EXPECT_EQ(memory.run(std::move(size)), object_size);
    EXPECT_EQ(memory.caps(), caps({1000, 2000, 4000})) << status;
  }
}

TEST(HttpClientRetries, GivesUpAfterTheConfiguredAttemptsWithCappedDelays) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  MemoryClient memory(io, failing_first(object, 1000, 502));
  ResponseVersion version;
  auto size = memory.client().content_length("/object", url, version);
  try {
    memory.run(std::move(size));
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_NE(std::string(error.what()).find("HTTP 502 Bad Gateway (after 10 attempts)"),
              std::string::npos)
        << error.what();
    EXPECT_TRUE(error.transient());
  }
  EXPECT_EQ(memory.caps(), caps({100, 200, 400, 800, 1600, 3200, 6400, 12800, 20000}));
}

TEST(HttpClientRetries, RetriesAreAnOption) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  HttpOptions options;
  options.max_retries = 2;
  options.retry_base_delay = milliseconds(30);
  options.retry_max_delay = milliseconds(50);
  MemoryClient memory(io, failing_first(object, 1000, 500), options);
  ResponseVersion version;
  auto size = memory.client().content_length("/object", url, version);
  EXPECT_THROW(memory.run(std::move(size)), StorageError);
  EXPECT_EQ(memory.caps(), caps({30, 50}));
}

TEST(HttpClientRetries, PermanentFailuresAreNotRetried) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  MemoryClient memory(io, failing_first(object, 1000, 403));
  ResponseVersion version;
  auto size = memory.client().content_length("/object", url, version);
  EXPECT_THROW(memory.run(std::move(size)), StorageError);
  EXPECT_TRUE(memory.caps().empty());
}

// A server that checks the range before If-Match (s3rver while it rewrites an object) answers
// a range inside the pinned object with 416 once a shorter object is in its place: that is the
// object changing, not a bad request; a range beyond the pinned size stays the caller's error.
TEST(HttpClientVersions, A416InsideThePinnedSizeIsTheObjectChanging) {
  const Responder shorter = [](const auto&) -> Reply {
    return {"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */500\r\n"
            "Content-Length: 0\r\n\r\n"};
  };
  const auto failure = [&](std::uint64_t offset) {
    asio::io_context io;
    MemoryClient memory(io, shorter);
    std::string destination(10, '\0');
    ResponseVersion version{.etag = "\"a\"", .size = 1000};
    auto read = memory.client().read_range("/object", url, offset, bytes_of(destination), version);
    try {
      memory.run(std::move(read));
    } catch (const StorageError& error) {
      EXPECT_FALSE(error.transient());
      return error.cause();
    }
    return std::string("no error");
  };
  EXPECT_EQ(failure(100),
            "the object changed while it was being read (bytes 100-109 lay inside the 1000 bytes "
            "of ETag \"a\" and are now beyond its end: HTTP 416 Range Not Satisfiable); restart "
            "the stream");
  EXPECT_EQ(failure(995),
            "HTTP 416 Range Not Satisfiable (requested bytes 995-1004 of an object of 500 bytes)");
}

TEST(HttpClientRetries, AStalledReadIsRetriedOnAFreshConnectionFromWhereItStopped) {
  const std::string object = pattern(object_size);
  asio::io_context io;
  ManualStallTimer clock;
  auto first = std::make_shared<bool>(true);
  const Responder respond = [&object, first](const auto& request) {
    if (std::exchange(*first, false)) return stop_sending_after(object, request, 100);
    return serve_object(object, request);
  };
  HttpOptions options;
  options.read_timeout = milliseconds(5000);
  MemoryClient memory(io, respond, options, &clock);
  std::string destination(range_size, '\0');
  ResponseVersion version;
  auto read = memory.client().read_range("/object", url, range_offset, bytes_of(destination), version);
  auto done = asio::co_spawn(io, std::move(read), asio::use_future);
  run_ready(io);
  ASSERT_FALSE(is_ready(done));
  clock.advance(milliseconds(5000));
  run_ready(io);
  ASSERT_TRUE(is_ready(done));
  done.get();
  EXPECT_EQ(destination, object.substr(range_offset, range_size));
  EXPECT_EQ(memory.connections(), 2u);
  EXPECT_EQ(memory.caps(), caps({100}));
  EXPECT_EQ(memory.client().stats().retries, 1u);
}

TEST(Backoff, FullJitterStaysWithinTheCap) {
  for (int i = 0; i < 1000; ++i) {
    const auto delay = full_jitter(milliseconds(7));
    EXPECT_GE(delay.count(), 0);
    EXPECT_LE(delay.count(), 7);
  }
  EXPECT_EQ(full_jitter(milliseconds(0)).count(), 0);
}

}  // namespace
}  // namespace tensorstream
