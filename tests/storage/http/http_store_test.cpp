#include "tensorstream/storage/http_store.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "support/certificates.hpp"
#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/logged_messages.hpp"
#include "support/loopback_listener.hpp"
#include "support/nginx_server.hpp"
#include "support/print_error_kind.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using testing::write_file;
using testing::Certificates;
using testing::random_bytes;
using testing::FaultServer;
using testing::LoopbackListener;
using testing::NginxServer;
using testing::TempDir;

// Not a multiple of any power of two, so ranges end at odd places.
constexpr std::size_t nginx_object_size = 3 * 1024 * 1024 + 4099;
constexpr std::size_t fault_object_size = 200 * 1024 + 7;

constexpr auto run = [](auto& io, auto task) { return testing::run_task(io, std::move(task)); };
constexpr auto read = testing::read_string;

// Compares without printing megabytes: names the first differing byte.
::testing::AssertionResult same_bytes(std::string_view expected, std::string_view actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  }
  // The comparison itself is the one operator== makes (memcmp): the sanitizer builds are
  // unoptimised, where std::mismatch alone took seconds per object.
  if (expected == actual) return ::testing::AssertionSuccess();
  const auto mismatch = std::mismatch(expected.begin(), expected.end(), actual.begin());
  return ::testing::AssertionFailure()
         << "first difference at byte " << (mismatch.first - expected.begin());
}

// Retries without waiting long, so failing tests stay fast.
HttpOptions quick_retries(int max_retries) {
  HttpOptions options;
  options.max_retries = max_retries;
  options.retry_base_delay = std::chrono::milliseconds(1);
  options.retry_max_delay = std::chrono::milliseconds(4);
  return options;
}

// Runs `body`, expecting it to throw exactly `Exception` (not a subclass), and returns it.
template <class Exception, class Body>
Exception expect_throw(Body&& body) {
  try {
    body();
  } catch (const Exception& error) {
    EXPECT_EQ(typeid(error), typeid(Exception)) << error.what();
    return error;
  } catch (const std::exception& error) {
    ADD_FAILURE() << "threw " << typeid(error).name() << ": " << error.what();
    throw;
  }
  ADD_FAILURE() << "did not throw";
  throw std::logic_error("did not throw");
}

// One nginx per test process serving object.bin (also under norange/, where nginx ignores
// Range), with locations answering 403 and 500.
class HttpStoreNginx : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!NginxServer::available()) return;
    object_ = random_bytes(nginx_object_size, 7);
    root_ = std::make_unique<TempDir>();
    write_file(root_->path() / "object.bin", object_);
    write_file(root_->path() / "norange" / "object.bin", object_);
    write_file(root_->path() / "forbidden" / "object.bin", object_);
    nginx_ = std::make_unique<NginxServer>(
        NginxServer::Options{.root = root_->path(),
                             .extra_config = "location /forbidden/ { return 403; }\n"
                                             "    location = /error/x { return 500; }\n"
                                             "    location /norange/ { max_ranges 0; }"});
  }

  static void TearDownTestSuite() {
    nginx_.reset();
    root_.reset();
  }

  void SetUp() override {
    if (!NginxServer::available())
      TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed at " << NginxServer::program);
  }

  HttpStore make_store(HttpOptions options = {}) {
    return HttpStore(io_.get_executor(), Url::parse(nginx_->base_url()), options);
  }

  static inline std::string object_;
  static inline std::unique_ptr<TempDir> root_;
  static inline std::unique_ptr<NginxServer> nginx_;
  asio::io_context io_;
};

TEST_F(HttpStoreNginx, ReadsRangesByteExact) {
  HttpStore store = make_store();
  const std::size_t size = object_.size();
  struct Range {
    std::uint64_t offset;
    std::size_t length;
  };
  std::vector<Range> ranges{{0, 1}, {size - 1, 1}, {0, size}, {12345, 1}, {1, size - 2}};
  std::mt19937 random(11);
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t offset = random() % size;
    const std::size_t length = 1 + random() % std::min<std::size_t>(size - offset, 300'000);
    ranges.push_back({offset, length});
  }
  for (const auto& [offset, length] : ranges) {
    EXPECT_TRUE(same_bytes(std::string_view(object_).substr(offset, length),
                           read(io_, store, "/object.bin", offset, length)))
        << "bytes " << offset << "+" << length;
  }
  const StoreStats stats = store.stats();
  EXPECT_EQ(stats.requests, ranges.size());
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_EQ(stats.io_mode, "http");
  std::uint64_t bytes = 0;
  for (const auto& range : ranges) bytes += range.length;
  EXPECT_EQ(stats.bytes, bytes);
}

TEST_F(HttpStoreNginx, ReadsConcurrentlyFromSeveralThreads) {
  HttpStore store = make_store();
  constexpr int reads = 64;
  std::mt19937 random(5);
  std::vector<std::uint64_t> offsets;
  std::vector<std::string> buffers;
  std::vector<std::future<void>> done;
  for (int i = 0; i < reads; ++i) {
    offsets.push_back(random() % (object_.size() / 2));
    buffers.emplace_back(1 + random() % (object_.size() / 2), '\0');
  }
  for (int i = 0; i < reads; ++i) {
    done.push_back(asio::co_spawn(
        io_,
        store.read_range("/object.bin", offsets[i], std::as_writable_bytes(std::span(buffers[i]))),
        asio::use_future));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([this] { io_.run(); });
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < reads; ++i) {
    done[i].get();
    EXPECT_TRUE(
        same_bytes(std::string_view(object_).substr(offsets[i], buffers[i].size()), buffers[i]))
        << "read " << i;
  }
  EXPECT_EQ(store.stats().requests, static_cast<std::uint64_t>(reads));
  EXPECT_LE(store.stats().connections, static_cast<std::uint64_t>(reads));
}

TEST_F(HttpStoreNginx, ReusesOneConnectionForSequentialReads) {
  HttpStore store = make_store();
  for (std::uint64_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(same_bytes(std::string_view(object_).substr(i * 4096, 4096),
                           read(io_, store, "/object.bin", i * 4096, 4096)));
  }
  EXPECT_EQ(store.stats().requests, 200u);
  EXPECT_EQ(store.stats().connections, 1u);
}

TEST_F(HttpStoreNginx, ReportsSize) {
  HttpStore store = make_store();
  EXPECT_EQ(run(io_, store.size("/object.bin")), object_.size());
  const auto error = expect_throw<NotFoundError>([&] { run(io_, store.size("/missing.bin")); });
  EXPECT_EQ(error.cause(), "HTTP 404 Not Found");
}

TEST_F(HttpStoreNginx, MissingObjectIsNotFound) {
  HttpStore store = make_store();
  const auto error =
      expect_throw<NotFoundError>([&] { read(io_, store, "/models/missing.bin", 0, 10); });
  EXPECT_EQ(error.object(), nginx_->base_url() + "/models/missing.bin");
  EXPECT_EQ(error.cause(), "HTTP 404 Not Found");
  EXPECT_NE(std::string(error.what()).find(nginx_->base_url() + "/models/missing.bin"),
            std::string::npos);
  EXPECT_NE(std::string(error.what()).find("404"), std::string::npos);
  EXPECT_FALSE(error.transient());
  EXPECT_EQ(store.stats().retries, 0u);
}

TEST_F(HttpStoreNginx, ForbiddenFailsWithoutRetrying) {
  HttpStore store = make_store(quick_retries(3));
  const auto error =
      expect_throw<StorageError>([&] { read(io_, store, "/forbidden/object.bin", 0, 10); });
  EXPECT_EQ(std::string(error.what()),
            nginx_->base_url() + "/forbidden/object.bin: HTTP 403 Forbidden");
  EXPECT_FALSE(error.transient());
  EXPECT_EQ(error.kind(), ErrorKind::access_denied);
  EXPECT_EQ(store.stats().requests, 1u);
  EXPECT_EQ(store.stats().retries, 0u);
}

TEST_F(HttpStoreNginx, ServerErrorIsRetriedThenReported) {
  HttpStore store = make_store(quick_retries(2));
  const auto error = expect_throw<StorageError>([&] { read(io_, store, "/error/x", 0, 10); });
  EXPECT_EQ(error.cause(), "HTTP 500 Internal Server Error (after 3 attempts)");
  EXPECT_TRUE(error.transient());
  EXPECT_EQ(store.stats().requests, 3u);
  EXPECT_EQ(store.stats().retries, 2u);
}

TEST_F(HttpStoreNginx, ServerWithoutRangesIsReadByteExact) {
  testing::LoggedMessages warnings(LogLevel::warning);
  HttpStore store = make_store();
  const std::size_t size = object_.size();
  for (const auto& [offset, length] : std::vector<std::pair<std::uint64_t, std::size_t>>{
           {0, 10}, {1'000'000, 65'537}, {size - 1, 1}, {0, size}}) {
    EXPECT_TRUE(same_bytes(std::string_view(object_).substr(offset, length),
                           read(io_, store, "/norange/object.bin", offset, length)))
        << "bytes " << offset << "+" << length;
  }
  const auto messages = warnings.messages();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("/norange/object.bin"), std::string::npos);
  EXPECT_NE(messages[0].find("ignores Range"), std::string::npos);
}

TEST_F(HttpStoreNginx, RangePastTheEndIsAnError) {
  HttpStore store = make_store();
  const std::size_t size = object_.size();
  const auto clipped =
      expect_throw<StorageError>([&] { read(io_, store, "/object.bin", size - 10, 20); });
  EXPECT_EQ(clipped.cause(), "object is " + std::to_string(size) + " bytes long; requested bytes " +
                                 std::to_string(size - 10) + "-" + std::to_string(size + 9));
  EXPECT_FALSE(clipped.transient());
  const auto beyond = expect_throw<StorageError>([&] { read(io_, store, "/object.bin", size, 5); });
  EXPECT_EQ(beyond.cause(), "HTTP 416 Range Not Satisfiable (requested bytes " +
                                std::to_string(size) + "-" + std::to_string(size + 4) +
                                " of an object of " + std::to_string(size) + " bytes)");
  EXPECT_EQ(store.stats().retries, 0u);
}

TEST_F(HttpStoreNginx, EmptyReadSendsNothing) {
  HttpStore store = make_store();
  run(io_, store.read_range("/object.bin", 5, {}));
  EXPECT_EQ(store.stats().requests, 0u);
}

TEST_F(HttpStoreNginx, RejectsKeysThatAreNotPaths) {
  HttpStore store = make_store();
  expect_throw<InvalidArgument>([&] { read(io_, store, "object.bin", 0, 1); });
  expect_throw<InvalidArgument>([&] { read(io_, store, "/a b.bin", 0, 1); });
  EXPECT_EQ(store.stats().requests, 0u);
}

TEST(HttpStore, CannotList) {
  asio::io_context io;
  HttpStore store(io.get_executor(), Url::parse("http://127.0.0.1:9/models/"));
  EXPECT_FALSE(store.can_list());
  const auto error = expect_throw<InvalidArgument>([&] { run(io, store.list("/models/", ListDepth::one_level)); });
  EXPECT_EQ(
      std::string(error.what()),
      "http://127.0.0.1:9/models/: HTTP servers cannot list objects; name a file or an index");
}

TEST(HttpStore, UrlIsOriginAndKey) {
  asio::io_context io;
  HttpStore store(io.get_executor(), Url::parse("https://example.com:443/ignored/path"));
  EXPECT_EQ(store.url("/m/a.safetensors"), "https://example.com/m/a.safetensors");
  HttpStore other(io.get_executor(), Url::parse("http://127.0.0.1:8080"));
  EXPECT_EQ(other.url("/a%20b"), "http://127.0.0.1:8080/a%20b");
}

TEST(HttpStore, RejectsOtherSchemes) {
  asio::io_context io;
  expect_throw<InvalidArgument>(
      [&] { HttpStore(io.get_executor(), Url::parse("s3://bucket/key")); });
}

TEST(HttpStore, RefusedConnectionIsReported) {
  // A bound socket that does not listen makes connections to its port fail with RST, and keeps
  // any other program from taking the port meanwhile.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string origin = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  // Never reached by this process: nothing listens there, and retrying would only delay saying so.
  asio::io_context io;
  HttpStore store(io.get_executor(), Url::parse(origin), quick_retries(4));
  const auto error = expect_throw<StorageError>([&] { read(io, store, "/object.bin", 0, 1); });
  ::close(fd);
  EXPECT_EQ(std::string(error.what()),
            origin + "/object.bin: connection refused (nothing listens there)");
  EXPECT_FALSE(error.transient());
  EXPECT_EQ(store.stats().connections, 0u);
  EXPECT_EQ(store.stats().retries, 0u);
}

// A server this process has reached before that refuses now is restarting: worth retrying.
TEST(HttpStore, ARefusalFromAServerReachedBeforeIsRetried) {
  std::string origin;
  asio::io_context io;
  {
    FaultServer server("/object.bin", "abc", {});
    origin = server.base_url();
    HttpStore first(io.get_executor(), Url::parse(origin), quick_retries(0));
    EXPECT_EQ(read(io, first, "/object.bin", 0, 3), "abc");
  }
  HttpStore store(io.get_executor(), Url::parse(origin), quick_retries(2));
  const auto error = expect_throw<StorageError>([&] { read(io, store, "/object.bin", 0, 1); });
  EXPECT_EQ(std::string(error.what()), origin + "/object.bin: connection refused (after 3 attempts)");
  EXPECT_TRUE(error.transient());
  EXPECT_EQ(store.stats().retries, 2u);
}

// nginx over TLS with a CA made for the test.
class HttpStoreTls : public HttpStoreNginx {
 protected:
  static void SetUpTestSuite() {
    if (!NginxServer::available() || !Certificates::available()) return;
    object_ = random_bytes(nginx_object_size, 9);
    root_ = std::make_unique<TempDir>();
    write_file(root_->path() / "object.bin", object_);
    pki_ = std::make_unique<TempDir>();
    certificates_ = Certificates::generate(pki_->path());
    nginx_ = std::make_unique<NginxServer>(
        NginxServer::Options{.root = root_->path(),
                             .certificate = certificates_.server_certificate,
                             .key = certificates_.server_key});
  }

  static void TearDownTestSuite() {
    HttpStoreNginx::TearDownTestSuite();
    pki_.reset();
  }

  void SetUp() override {
    HttpStoreNginx::SetUp();
    if (!Certificates::available()) TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
  }

  HttpOptions trusting(const std::filesystem::path& ca) {
    HttpOptions options = quick_retries(2);
    options.ca_file = ca;
    return options;
  }

  static inline std::unique_ptr<TempDir> pki_;
  static inline Certificates certificates_;
};

TEST_F(HttpStoreTls, ReadsByteExactWithTheRightCa) {
  HttpStore store = make_store(trusting(certificates_.ca));
  const std::size_t size = object_.size();
  std::mt19937 random(3);
  std::vector<std::pair<std::uint64_t, std::size_t>> ranges{{0, 1}, {size - 1, 1}, {0, size}};
  for (int i = 0; i < 20; ++i) {
    const std::uint64_t offset = random() % size;
    ranges.emplace_back(offset, 1 + random() % (size - offset));
  }
  for (const auto& [offset, length] : ranges) {
    EXPECT_TRUE(same_bytes(std::string_view(object_).substr(offset, length),
                           read(io_, store, "/object.bin", offset, length)))
        << "bytes " << offset << "+" << length;
  }
  EXPECT_EQ(run(io_, store.size("/object.bin")), size);
  EXPECT_EQ(store.stats().connections, 1u);
}

// The first connection gets the server's session tickets with its first response; every
// connection opened after it resumes that session instead of a full handshake.
TEST_F(HttpStoreTls, ConnectionsOpenedLaterResumeTheFirstOnesSession) {
  HttpStore store = make_store(trusting(certificates_.ca));
  EXPECT_TRUE(same_bytes(std::string_view(object_).substr(0, 1000),
                         read(io_, store, "/object.bin", 0, 1000)));
  constexpr int reads = 16;
  std::vector<std::string> buffers(reads, std::string(object_.size() / 2, '\0'));
  std::vector<std::future<void>> done;
  for (int i = 0; i < reads; ++i) {
    done.push_back(asio::co_spawn(
        io_,
        store.read_range("/object.bin", static_cast<std::uint64_t>(i),
                         std::as_writable_bytes(std::span(buffers[i]))),
        asio::use_future));
  }
  io_.restart();
  io_.run();
  for (int i = 0; i < reads; ++i) {
    done[i].get();
    EXPECT_TRUE(same_bytes(std::string_view(object_).substr(i, buffers[i].size()), buffers[i]))
        << "read " << i;
  }
  const auto stats = store.stats();
  EXPECT_EQ(stats.io_mode, "https");
  EXPECT_GT(stats.connections, 1u);
  EXPECT_EQ(stats.tls_resumed, stats.connections - 1);
}

// A TCP relay to nginx that hangs up on the first connection after 64 KiB of the server's bytes,
// without a TLS close_notify: the read that was cut is a transient failure, retried on a new
// connection, and the bytes come out exact.
TEST_F(HttpStoreTls, ATlsStreamCutMidBodyIsRetriedAndReadExactly) {
  std::atomic<int> connections{0};
  LoopbackListener relay([&](asio::ip::tcp::socket accepted) -> asio::awaitable<void> {
    const bool cut = connections++ == 0;
    auto client = std::make_shared<asio::ip::tcp::socket>(std::move(accepted));
    auto server = std::make_shared<asio::ip::tcp::socket>(client->get_executor());
    co_await server->async_connect(
        {asio::ip::address_v4::loopback(), nginx_->port()}, asio::use_awaitable);
    auto pump = [](std::shared_ptr<asio::ip::tcp::socket> from,
                   std::shared_ptr<asio::ip::tcp::socket> to,
                   std::size_t limit) -> asio::awaitable<void> {
      std::array<char, 16384> buffer;
      std::size_t forwarded = 0;
      while (forwarded < limit) {
        auto [read_error, n] = co_await from->async_read_some(
            asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
        if (read_error) break;
        auto [write_error, written] = co_await asio::async_write(
            *to, asio::buffer(buffer.data(), n), asio::as_tuple(asio::use_awaitable));
        if (write_error) break;
        forwarded += written;
      }
      boost::system::error_code ignored;
      from->close(ignored);
      to->close(ignored);
    };
    asio::co_spawn(client->get_executor(), pump(client, server, SIZE_MAX), asio::detached);
    co_await pump(server, client, cut ? 64 * 1024 : SIZE_MAX);
  });
  HttpStore store(io_.get_executor(),
                  Url::parse("https://127.0.0.1:" + std::to_string(relay.port())),
                  trusting(certificates_.ca));
  EXPECT_TRUE(same_bytes(object_, read(io_, store, "/object.bin", 0, object_.size())));
  EXPECT_EQ(store.stats().retries, 1u);
  EXPECT_EQ(store.stats().connections, 2u);
}

TEST_F(HttpStoreTls, ChecksTheHostNameOfLocalhost) {
  HttpStore store(io_.get_executor(),
                  Url::parse("https://localhost:" + std::to_string(nginx_->port())),
                  trusting(certificates_.ca));
  EXPECT_TRUE(same_bytes(std::string_view(object_).substr(100, 1000),
                         read(io_, store, "/object.bin", 100, 1000)));
}

TEST_F(HttpStoreTls, RejectsAServerSignedByAnotherCa) {
  HttpStore store = make_store(trusting(certificates_.other_ca));
  const auto error = expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 10); });
  EXPECT_EQ(error.object(), nginx_->base_url() + "/object.bin");
  EXPECT_TRUE(error.cause().starts_with("TLS handshake failed: certificate verify failed"))
      << error.cause();
  EXPECT_FALSE(error.transient());
  EXPECT_EQ(store.stats().retries, 0u);
  EXPECT_EQ(store.stats().connections, 0u);
}

TEST_F(HttpStoreTls, TrustsTheSystemStoreNamedBySslCertFile) {
  const char* previous = std::getenv("SSL_CERT_FILE");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("SSL_CERT_FILE", certificates_.ca.c_str(), 1);
  HttpOptions options = quick_retries(0);
  HttpStore store = make_store(options);
  if (previous != nullptr) {
    ::setenv("SSL_CERT_FILE", saved.c_str(), 1);
  } else {
    ::unsetenv("SSL_CERT_FILE");
  }
  EXPECT_TRUE(same_bytes(std::string_view(object_).substr(0, 4096),
                         read(io_, store, "/object.bin", 0, 4096)));
}

TEST_F(HttpStoreTls, UnreadableCaFileIsInvalidArgument) {
  const auto error =
      expect_throw<InvalidArgument>([&] { make_store(trusting(pki_->path() / "missing.pem")); });
  EXPECT_NE(std::string(error.what()).find("missing.pem"), std::string::npos);
}

// The fault-injecting server, one per test.
class HttpStoreFaults : public ::testing::Test {
 protected:
  void start(FaultServer::Behaviour behaviour) {
    server_ = std::make_unique<FaultServer>("/object.bin", object_, behaviour);
  }

  HttpStore make_store(HttpOptions options = quick_retries(4)) {
    return HttpStore(io_.get_executor(), Url::parse(server_->base_url()), options);
  }

  std::string_view expected(std::uint64_t offset, std::size_t length) const {
    return std::string_view(object_).substr(offset, length);
  }

  const std::string object_ = random_bytes(fault_object_size, 13);
  asio::io_context io_;
  std::unique_ptr<FaultServer> server_;
};

TEST_F(HttpStoreFaults, WellBehavedServer) {
  start({});
  HttpStore store = make_store();
  EXPECT_TRUE(same_bytes(expected(100, 5000), read(io_, store, "/object.bin", 100, 5000)));
  EXPECT_EQ(run(io_, store.size("/object.bin")), object_.size());
  EXPECT_EQ(server_->ranges(), (std::vector<std::string>{"bytes=100-5099", ""}));
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(HttpStoreFaults, ServerIgnoringRangeIsReadByteExact) {
  testing::LoggedMessages warnings(LogLevel::warning);
  start({.honour_range = false});
  HttpStore store = make_store();
  const std::size_t size = object_.size();
  for (const auto& [offset, length] : std::vector<std::pair<std::uint64_t, std::size_t>>{
           {0, 100}, {5000, 70000}, {size - 1, 1}, {0, size}}) {
    EXPECT_TRUE(
        same_bytes(expected(offset, length), read(io_, store, "/object.bin", offset, length)))
        << "bytes " << offset << "+" << length;
  }
  // A read that stops short of the end closes its connection rather than draining the rest of
  // the object; the read of the last byte consumed the whole body and could keep it.
  EXPECT_EQ(server_->connections(), 3);
  EXPECT_EQ(store.stats().connections, 3u);
  EXPECT_EQ(warnings.messages().size(), 1u);
}

TEST_F(HttpStoreFaults, ChunkedBodiesAreReadByteExact) {
  start({.chunked = true, .chunk_size = 1000});
  HttpStore store = make_store();
  const std::size_t size = object_.size();
  for (const auto& [offset, length] : std::vector<std::pair<std::uint64_t, std::size_t>>{
           {0, 1}, {999, 2}, {1234, 100'000}, {size - 1, 1}, {0, size}}) {
    EXPECT_TRUE(
        same_bytes(expected(offset, length), read(io_, store, "/object.bin", offset, length)))
        << "bytes " << offset << "+" << length;
  }
  // Every chunked body was read to its last chunk, so the connection stayed usable.
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(HttpStoreFaults, ChunkedWholeObjectsAreReadByteExact) {
  testing::LoggedMessages warnings(LogLevel::warning);
  start({.honour_range = false, .chunked = true, .chunk_size = 4096});
  HttpStore store = make_store();
  EXPECT_TRUE(
      same_bytes(expected(70'000, 50'000), read(io_, store, "/object.bin", 70'000, 50'000)));
  EXPECT_TRUE(
      same_bytes(expected(0, object_.size()), read(io_, store, "/object.bin", 0, object_.size())));
}

TEST_F(HttpStoreFaults, TruncatedBodyIsResumed) {
  start({.truncate_first = 2, .truncate_after = 1000});
  HttpStore store = make_store();
  EXPECT_TRUE(
      same_bytes(expected(10'000, 50'000), read(io_, store, "/object.bin", 10'000, 50'000)));
  // Each retry asks only for the bytes still missing.
  EXPECT_EQ(server_->ranges(), (std::vector<std::string>{"bytes=10000-59999", "bytes=11000-59999",
                                                         "bytes=12000-59999"}));
  EXPECT_EQ(store.stats().retries, 2u);
}

TEST_F(HttpStoreFaults, AlwaysTruncatedBodyFails) {
  start({.truncate_first = FaultServer::always, .truncate_after = 1000});
  HttpStore store = make_store(quick_retries(2));
  const auto error =
      expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 50'000); });
  EXPECT_EQ(error.cause(),
            "truncated body: connection closed after 1000 of 48000 bytes (after 3 attempts)");
  EXPECT_TRUE(error.transient());
  EXPECT_EQ(server_->requests(), 3);
}

TEST_F(HttpStoreFaults, UnavailableServerIsRetried) {
  start({.fail_first = 2});
  HttpStore store = make_store();
  EXPECT_TRUE(same_bytes(expected(5, 20'000), read(io_, store, "/object.bin", 5, 20'000)));
  EXPECT_EQ(store.stats().retries, 2u);
  EXPECT_EQ(store.stats().requests, 3u);
  EXPECT_EQ(server_->requests(), 3);
}

TEST_F(HttpStoreFaults, UnavailableServerFailsAfterTheLastAttempt) {
  start({.fail_first = FaultServer::always});
  HttpStore store = make_store();
  const auto error = expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 10); });
  // The server's text body is quoted.
  EXPECT_EQ(error.cause(), "HTTP 503 Service Unavailable: injected failure (after 5 attempts)");
  EXPECT_EQ(server_->requests(), 5);
}

TEST_F(HttpStoreFaults, TooManyRequestsIsRetried) {
  start({.fail_first = 1, .fail_status = 429});
  HttpStore store = make_store();
  EXPECT_TRUE(same_bytes(expected(0, 10), read(io_, store, "/object.bin", 0, 10)));
  EXPECT_EQ(store.stats().retries, 1u);
}

TEST_F(HttpStoreFaults, StalledResponseTimesOut) {
  start({.stall = true});
  HttpOptions options = quick_retries(1);
  options.read_timeout = std::chrono::milliseconds(50);
  HttpStore store = make_store(options);
  const auto error =
      expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 10'000); });
  EXPECT_EQ(error.cause(),
            "body stalled after 0 of 10000 bytes: no data for 50 ms (after 2 attempts)");
  EXPECT_TRUE(error.transient());
}

TEST_F(HttpStoreFaults, AServerThatNeverAnswersIsRetriedAfterTheResponseTimeout) {
  start({.silent_from_request = 0});
  HttpOptions options = quick_retries(1);
  options.response_timeout = std::chrono::milliseconds(50);
  // Far longer, so that only the response timeout can end the wait.
  options.read_timeout = std::chrono::hours(1);
  HttpStore store = make_store(options);
  const auto error =
      expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 10'000); });
  EXPECT_EQ(error.cause(), "no response for 50 ms (after 2 attempts)");
  EXPECT_TRUE(error.transient());
  EXPECT_EQ(server_->requests(), 2);
}

TEST_F(HttpStoreFaults, TheResponseTimeoutComesFromTheEnvironmentWhereTheOptionsLeaveIt) {
  start({.silent_from_request = 0});
  testing::ScopedEnvironment environment({"FLYTE_MODEL_LOADER_RESPONSE_TIMEOUT"});
  environment.set("TENSORSTREAM_RESPONSE_TIMEOUT", "0.05");
  {
    HttpOptions options = quick_retries(0);
    options.read_timeout = std::chrono::hours(1);
    HttpStore store = make_store(options);
    const auto error =
        expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 0, 10); });
    EXPECT_EQ(error.cause(), "no response for 50 ms (after 1 attempt)");
  }
  environment.set("TENSORSTREAM_RESPONSE_TIMEOUT", "10s");
  const auto error = expect_throw<InvalidArgument>([&] { make_store(); });
  EXPECT_EQ(std::string(error.what()),
            "TENSORSTREAM_RESPONSE_TIMEOUT='10s' is not a number of seconds above 0 and at most "
            "86400 (e.g. 10, 2.5)");
}

TEST_F(HttpStoreFaults, TheStatsSayWhatARequestWaitsForAndSinceWhen) {
  start({.silent_from_request = 1});
  HttpStore store = make_store(quick_retries(0));
  EXPECT_TRUE(same_bytes(expected(0, 10), read(io_, store, "/object.bin", 0, 10)));
  EXPECT_EQ(store.stats().waiting_for, "");
  EXPECT_EQ(store.stats().waiting_seconds, 0);

  asio::cancellation_signal cancel;
  std::string bytes(10, '\0');
  auto done = asio::co_spawn(
      io_, store.read_range("/object.bin", 0, std::as_writable_bytes(std::span(bytes))),
      asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
  std::thread io_thread([this] {
    io_.restart();
    io_.run();
  });
  while (server_->requests() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const StoreStats waiting = store.stats();
  EXPECT_EQ(waiting.waiting_for, "a response from 127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_GE(waiting.waiting_seconds, 0.1);
  asio::post(io_, [&] { cancel.emit(asio::cancellation_type::terminal); });
  io_thread.join();
  EXPECT_THROW(done.get(), boost::system::system_error);
  EXPECT_EQ(store.stats().waiting_for, "");
}

TEST_F(HttpStoreFaults, ResetMidBodyIsRetried) {
  start({.reset_first = 1, .truncate_after = 5000});
  HttpStore store = make_store();
  EXPECT_TRUE(same_bytes(expected(1000, 100'000), read(io_, store, "/object.bin", 1000, 100'000)));
  EXPECT_EQ(store.stats().retries, 1u);
  EXPECT_EQ(server_->requests(), 2);
}

TEST_F(HttpStoreFaults, WrongContentRangeIsRejected) {
  start({.wrong_content_range = true});
  HttpStore store = make_store();
  const auto error = expect_throw<StorageError>([&] { read(io_, store, "/object.bin", 100, 100); });
  EXPECT_EQ(error.cause(), "Content-Range 'bytes 101-200/" + std::to_string(object_.size()) +
                               "' does not match the requested bytes 100-199");
  EXPECT_FALSE(error.transient());
  EXPECT_EQ(server_->requests(), 1);
}

TEST_F(HttpStoreFaults, ConnectionClosedWhileIdleIsReplacedAtOnce) {
  start({.close_after_response = true});
  HttpStore store = make_store(quick_retries(0));
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        same_bytes(expected(i * 1000, 1000), read(io_, store, "/object.bin", i * 1000, 1000)));
  }
  // Each reuse found the connection closed and replayed the request on a new one, without
  // using up the (zero) retries.
  EXPECT_EQ(server_->requests(), 3);
  EXPECT_EQ(store.stats().connections, 3u);
  EXPECT_EQ(store.stats().retries, 2u);
}

TEST_F(HttpStoreFaults, CancellingTheCallerAbortsTheRead) {
  start({.stall = true});
  HttpStore store = make_store();
  asio::cancellation_signal cancel;
  std::string bytes(10'000, '\0');
  auto done = asio::co_spawn(
      io_, store.read_range("/object.bin", 0, std::as_writable_bytes(std::span(bytes))),
      asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
  // Cancel once the request is stuck waiting for the body.
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io_);
        while (server_->requests() == 0) {
          timer.expires_after(std::chrono::milliseconds(1));
          co_await timer.async_wait(asio::use_awaitable);
        }
        cancel.emit(asio::cancellation_type::terminal);
      },
      asio::detached);
  io_.run();
  try {
    done.get();
    ADD_FAILURE() << "the read was not cancelled";
  } catch (const boost::system::system_error& error) {
    EXPECT_EQ(error.code(), asio::error::operation_aborted);
  }
  EXPECT_EQ(store.stats().retries, 0u);
}

}  // namespace
}  // namespace tensorstream
