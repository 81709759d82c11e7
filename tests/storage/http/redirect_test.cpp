// Redirects of size and range reads, against real nginx: every status that redirects, relative
// locations, another scheme, loops, and the location each object's redirects led to.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/http/http_client.hpp"
#include "storage/http/redirect.hpp"
#include "storage/response_version.hpp"
#include "support/certificates.hpp"
#include "support/files.hpp"
#include "support/loopback_listener.hpp"
#include "support/nginx_server.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/http_store.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using testing::write_file;
using testing::Certificates;
using testing::LoopbackListener;
using testing::NginxServer;
using testing::TempDir;

constexpr std::size_t redirected_size = 1024 * 1024 + 17;

// Requests of `path` in nginx's access log at `log`. A request to /sentinel first makes sure
// nginx logged every request answered before it: its one worker finishes a request, log line
// included, before it reads the next.
int logged_requests(const NginxServer& nginx, const std::filesystem::path& log,
                    const std::string& path) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), nginx.port()});
  const std::string request = "GET /sentinel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  boost::system::error_code ignored;
  std::string answer;
  asio::read(socket, asio::dynamic_buffer(answer), ignored);

  std::ifstream in(log);
  int count = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find(" " + path + " HTTP/1.1\"") != std::string::npos) ++count;
  }
  return count;
}

TEST(ResolveLocation, AsRfc3986ResolvesReferences) {
  const auto resolve = [](std::string_view location) {
    return resolve_location("http://h:8080", "/a/b/c?q=1", location);
  };
  EXPECT_EQ(resolve("https://x/y?z"), "https://x/y?z");
  EXPECT_EQ(resolve("//x:81/y"), "http://x:81/y");
  EXPECT_EQ(resolve("/y?z"), "http://h:8080/y?z");
  EXPECT_EQ(resolve("d"), "http://h:8080/a/b/d");
  EXPECT_EQ(resolve("../d?e"), "http://h:8080/a/d?e");
  EXPECT_EQ(resolve("./d/../e"), "http://h:8080/a/b/e");
  EXPECT_EQ(resolve("../../../d"), "http://h:8080/d");
  EXPECT_EQ(resolve("?r"), "http://h:8080/a/b/c?r");
  EXPECT_EQ(resolve("d#part"), "http://h:8080/a/b/d");
}

// nginx over TLS serving object.bin, and plain nginx serving it too and redirecting to it in
// every way.
class HttpRedirects : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!NginxServer::available() || !Certificates::available()) return;
    object_ = testing::random_bytes(redirected_size, 21);
    root_ = std::make_unique<TempDir>();
    write_file(root_->path() / "object.bin", object_);
    write_file(root_->path() / "v1" / "object.bin", object_);
    write_file(root_->path() / "signed" / "object.bin", object_);
    write_file(root_->path() / "nohead" / "object.bin", object_);
    certificates_ = Certificates::generate(root_->path());
    const std::string sentinel = "location = /sentinel { access_log off; return 204; }\n";
    tls_ = std::make_unique<NginxServer>(NginxServer::Options{
        .root = root_->path(),
        .certificate = certificates_.server_certificate,
        .key = certificates_.server_key,
        .extra_config = sentinel + "access_log " + (root_->path() / "tls.log").string() + ";\n" +
                        "location = /downgrade/object.bin { return 302 "
                        "http://127.0.0.1:1/object.bin; }"});
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{
        .root = root_->path(),
        .extra_config = sentinel + "access_log " + (root_->path() / "access.log").string() + ";\n" +
                        // Locations as written, not made absolute, to test how they are resolved.
                        "absolute_redirect off;\n"
                        "location = /r301/object.bin { return 301 /object.bin; }\n"
                        "location = /r302/object.bin { return 302 /object.bin; }\n"
                        "location = /r303/object.bin { return 303 /object.bin; }\n"
                        "location = /r307/object.bin { return 307 /object.bin; }\n"
                        "location = /r308/object.bin { return 308 /object.bin; }\n"
                        "location = /relative/a/object.bin { return 302 ../../object.bin?x=1; }\n"
                        "location = /absolute/object.bin { return 302 "
                        "http://localhost:$server_port/object.bin; }\n"
                        "location = /chain/object.bin { return 302 /r307/object.bin; }\n"
                        "location = /secure/object.bin { return 302 https://127.0.0.1:" +
                        std::to_string(tls_->port()) +
                        "/object.bin; }\n"
                        // A presigned URL, signed for GET only, behind a hub's redirect.
                        "location = /presigned/object.bin { return 302 /signed/object.bin; }\n"
                        "location = /signed/object.bin {\n"
                        "  if ($request_method = HEAD) { return 403; }\n"
                        "}\n"
                        "location = /nohead/object.bin {\n"
                        "  if ($request_method = HEAD) { return 405; }\n"
                        "}\n"
                        "location = /loop/a { return 302 /loop/b; }\n"
                        "location = /loop/b { return 302 /loop/a; }\n"
                        // Where the object is now: v1 until a test moves it to v2.
                        "location = /moving/object.bin {\n"
                        "  if (-f $document_root/v2/object.bin) { return 302 /v2/object.bin; }\n"
                        "  return 302 /v1/object.bin;\n"
                        "}"});
  }

  static void TearDownTestSuite() {
    nginx_.reset();
    tls_.reset();
    root_.reset();
  }

  void SetUp() override {
    if (!NginxServer::available()) {
      TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed at " << NginxServer::program);
    }
    if (!Certificates::available()) {
      TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
    }
  }

  static HttpOptions options() {
    HttpOptions options;
    options.ca_file = certificates_.ca;
    options.max_retries = 0;
    options.proxies = ProxyOptions{};
    return options;
  }

  HttpStore make_store(const NginxServer& nginx) {
    return HttpStore(io_.get_executor(), Url::parse(nginx.base_url()), options());
  }

  int hits(const std::string& path) {
    return logged_requests(*nginx_, root_->path() / "access.log", path);
  }

  // Reads the size of `key`, then the object in three ranges, and checks the bytes.
  void read_whole(HttpStore& store, const std::string& key) {
    ASSERT_EQ(testing::run_task(io_, store.size(key)), redirected_size);
    const std::size_t third = redirected_size / 3;
    std::string bytes;
    bytes += testing::read_string(io_, store, key, 0, third);
    bytes += testing::read_string(io_, store, key, third, third);
    bytes += testing::read_string(io_, store, key, 2 * third, redirected_size - 2 * third);
    EXPECT_TRUE(bytes == object_) << key << ": the bytes differ";
  }

  static inline std::string object_;
  static inline std::unique_ptr<TempDir> root_;
  static inline Certificates certificates_;
  static inline std::unique_ptr<NginxServer> tls_;
  static inline std::unique_ptr<NginxServer> nginx_;
  asio::io_context io_;
};

// The size pays the redirect once; the three reads go straight to where it led.
TEST_F(HttpRedirects, EveryRedirectStatusIsFollowedOnceAndRemembered) {
  for (const std::string status : {"301", "302", "303", "307", "308"}) {
    const std::string key = "/r" + status + "/object.bin";
    HttpStore store = make_store(*nginx_);
    const int before = hits("/object.bin");
    read_whole(store, key);
    EXPECT_EQ(hits(key), 1) << key;
    EXPECT_EQ(hits("/object.bin") - before, 4) << key;
    EXPECT_EQ(store.stats().requests, 5u) << key;
  }
}

// HEAD refused where the redirect leads: the size comes from the first byte by GET, whose
// location the reads then go to straight.
TEST_F(HttpRedirects, ASizeRefusedToHeadIsTakenFromAOneByteGet) {
  HttpStore store = make_store(*nginx_);
  read_whole(store, "/presigned/object.bin");
  EXPECT_EQ(hits("/presigned/object.bin"), 2) << "HEAD, then the GET of one byte";
  EXPECT_EQ(hits("/signed/object.bin"), 5) << "the refused HEAD, the byte and three reads";
  EXPECT_EQ(store.stats().requests, 7u);

  HttpStore plain = make_store(*nginx_);
  read_whole(plain, "/nohead/object.bin");
  EXPECT_EQ(plain.stats().requests, 5u) << "a HEAD answered 405, the byte and three reads";
}

TEST_F(HttpRedirects, RelativeAndAbsoluteLocationsAreResolved) {
  HttpStore store = make_store(*nginx_);
  read_whole(store, "/relative/a/object.bin");
  EXPECT_EQ(hits("/relative/a/object.bin"), 1);
  EXPECT_EQ(hits("/object.bin?x=1"), 4);

  // Another host name of the same server is another origin, with connections of its own.
  HttpStore other = make_store(*nginx_);
  read_whole(other, "/absolute/object.bin");
  EXPECT_EQ(hits("/absolute/object.bin"), 1);
  EXPECT_EQ(other.stats().requests, 5u);
  EXPECT_EQ(other.stats().connections, 2u);
}

TEST_F(HttpRedirects, AChainIsFollowedToItsEnd) {
  HttpStore store = make_store(*nginx_);
  const int before = hits("/r307/object.bin");
  read_whole(store, "/chain/object.bin");
  EXPECT_EQ(hits("/chain/object.bin"), 1);
  EXPECT_EQ(hits("/r307/object.bin") - before, 1);
  EXPECT_EQ(store.stats().requests, 6u);
}

TEST_F(HttpRedirects, FromHttpToHttpsOverTls) {
  HttpStore store = make_store(*nginx_);
  const int before = logged_requests(*tls_, root_->path() / "tls.log", "/object.bin");
  read_whole(store, "/secure/object.bin");
  EXPECT_EQ(hits("/secure/object.bin"), 1);
  EXPECT_EQ(logged_requests(*tls_, root_->path() / "tls.log", "/object.bin") - before, 4);
  EXPECT_EQ(store.stats().io_mode, "http");
}

TEST_F(HttpRedirects, FromHttpsToHttpIsRefused) {
  HttpStore store = make_store(*tls_);
  const std::string url = tls_->base_url() + "/downgrade/object.bin";
  try {
    testing::run_task(io_, store.size("/downgrade/object.bin"));
    FAIL() << "no error";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              url + ": refusing the redirect from https to http://127.0.0.1:1/object.bin");
    EXPECT_FALSE(error.transient());
  }
}

TEST_F(HttpRedirects, ALoopStopsAfterTheLimit) {
  HttpStore store = make_store(*nginx_);
  const int a = hits("/loop/a");
  const int b = hits("/loop/b");
  try {
    testing::run_task(io_, store.size("/loop/a"));
    FAIL() << "no error";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              nginx_->base_url() + "/loop/a: too many redirects: stopped after 10, the next to " +
                  nginx_->base_url() + "/loop/b");
    EXPECT_FALSE(error.transient());
  }
  EXPECT_EQ(hits("/loop/a") - a, 6);
  EXPECT_EQ(hits("/loop/b") - b, 5);
}

TEST_F(HttpRedirects, NoRedirectsAtAllWithALimitOfZero) {
  HttpOptions limited = options();
  limited.max_redirects = 0;
  HttpStore store(io_.get_executor(), Url::parse(nginx_->base_url()), limited);
  try {
    testing::run_task(io_, store.size("/r302/object.bin"));
    FAIL() << "no error";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              nginx_->base_url() + "/r302/object.bin: too many redirects: stopped after 0, " +
                  "the next to " + nginx_->base_url() + "/object.bin");
  }
}

// The remembered location stops working (a presigned URL expired): the read starts over from
// the object's own URL once, and goes where its redirect leads now.
TEST_F(HttpRedirects, AStaleLocationIsLeftForTheObjectsOwnUrl) {
  HttpStore store = make_store(*nginx_);
  ASSERT_EQ(testing::run_task(io_, store.size("/moving/object.bin")), redirected_size);
  std::filesystem::rename(root_->path() / "v1", root_->path() / "v2");
  EXPECT_TRUE(testing::read_string(io_, store, "/moving/object.bin", 0, redirected_size) ==
              object_);
  EXPECT_EQ(hits("/moving/object.bin"), 2);
  EXPECT_EQ(hits("/v1/object.bin"), 2);
  EXPECT_EQ(hits("/v2/object.bin"), 1);
  EXPECT_EQ(testing::read_string(io_, store, "/moving/object.bin", 10, 10), object_.substr(10, 10));
  EXPECT_EQ(hits("/moving/object.bin"), 2);
  EXPECT_EQ(hits("/v2/object.bin"), 2);
  std::filesystem::rename(root_->path() / "v2", root_->path() / "v1");
}

// A server that answers HEAD with `answer` and records each request's header.
class RecordingServer {
 public:
  explicit RecordingServer(std::string answer)
      : answer_(std::move(answer)),
        listener_([this](asio::ip::tcp::socket socket) { return serve(std::move(socket)); }) {}

  std::uint16_t port() const { return listener_.port(); }

  std::vector<std::string> headers() const {
    std::lock_guard lock(mutex_);
    return headers_;
  }

 private:
  asio::awaitable<void> serve(asio::ip::tcp::socket socket) {
    for (;;) {
      std::string header;
      auto [ec, length] = co_await asio::async_read_until(
          socket, asio::dynamic_buffer(header), "\r\n\r\n", asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      {
        std::lock_guard lock(mutex_);
        headers_.push_back(header.substr(0, length));
      }
      co_await asio::async_write(socket, asio::buffer(answer_), asio::use_awaitable);
    }
  }

  const std::string answer_;
  mutable std::mutex mutex_;
  std::vector<std::string> headers_;
  LoopbackListener listener_;
};

class BearerToken final : public ServiceAdapter {
 public:
  asio::awaitable<Authorization> authorize(const RequestHead&) override {
    co_return Authorization{.headers = "Authorization: Bearer secret\r\n"};
  }
  void interpret(Failure&) const override {}
};

TEST(HttpRedirectCredentials, StayWithTheServerTheyAreFor) {
  RecordingServer target("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
  RecordingServer origin("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:" +
                         std::to_string(target.port()) + "/elsewhere\r\nContent-Length: 0\r\n\r\n");
  asio::io_context io;
  HttpOptions options;
  options.proxies = ProxyOptions{};
  HttpClient client(io.get_executor(),
                    Url::parse("http://127.0.0.1:" + std::to_string(origin.port())), options,
                    std::make_shared<BearerToken>());
  ResponseVersion version;
  EXPECT_EQ(testing::run_task(io, client.content_length("/object", "object", version)), 5u);
  ASSERT_EQ(origin.headers().size(), 1u);
  EXPECT_NE(origin.headers()[0].find("\r\nAuthorization: Bearer secret\r\n"), std::string::npos)
      << origin.headers()[0];
  ASSERT_EQ(target.headers().size(), 1u);
  EXPECT_TRUE(target.headers()[0].starts_with("HEAD /elsewhere HTTP/1.1\r\n"))
      << target.headers()[0];
  EXPECT_EQ(target.headers()[0].find("Authorization"), std::string::npos) << target.headers()[0];
}

}  // namespace
}  // namespace tensorstream
