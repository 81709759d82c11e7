// Proxies: which connections go through one, plain HTTP forwarded with absolute URLs, https
// through CONNECT tunnels, proxy credentials, and proxies that refuse.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "storage/http/proxy.hpp"
#include "support/certificates.hpp"
#include "support/forward_proxy.hpp"
#include "support/nginx_server.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/http_store.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using testing::Certificates;
using testing::ForwardProxy;
using testing::NginxServer;
using testing::ScopedEnvironment;
using testing::TempDir;

constexpr std::size_t proxied_size = 512 * 1024 + 3;

std::optional<Proxy> route(const ProxyOptions& options, const std::string& url) {
  return ProxyRoutes(options).route(Url::parse(url));
}

TEST(ProxyRoutes, EachSchemeHasItsProxy) {
  const ProxyOptions options{.http = "proxy:3128", .https = "http://u:p@secure-proxy/"};
  const auto http = route(options, "http://example.com/x");
  ASSERT_TRUE(http);
  EXPECT_EQ(http->host, "proxy");
  EXPECT_EQ(http->port, 3128);
  EXPECT_EQ(http->authorization, "");
  EXPECT_EQ(http->url, "http://proxy:3128");
  const auto https = route(options, "https://example.com/x");
  ASSERT_TRUE(https);
  EXPECT_EQ(https->host, "secure-proxy");
  EXPECT_EQ(https->port, 1080);
  EXPECT_EQ(https->authorization, "Basic dTpw");
  EXPECT_EQ(https->url, "http://secure-proxy");
  EXPECT_FALSE(route({.https = "proxy:3128"}, "http://example.com/x"));
}

TEST(ProxyRoutes, NoProxyNamesHostsTheirSubdomainsAndPorts) {
  const ProxyOptions options{.http = "proxy:3128",
                             .https = "proxy:3128",
                             .no_proxy = "example.com, .internal,localhost:8080"};
  EXPECT_FALSE(route(options, "http://example.com/"));
  EXPECT_FALSE(route(options, "https://a.b.EXAMPLE.com/"));
  EXPECT_TRUE(route(options, "http://notexample.com/"));
  EXPECT_FALSE(route(options, "http://store.internal/"));
  EXPECT_FALSE(route(options, "http://internal/"));
  EXPECT_FALSE(route(options, "http://localhost:8080/"));
  EXPECT_TRUE(route(options, "http://localhost:8081/"));
  // Loopback is not exempt unless listed, as with curl.
  EXPECT_TRUE(route(options, "http://127.0.0.1/"));
  EXPECT_FALSE(route({.http = "proxy", .no_proxy = "*"}, "http://anything/"));
  EXPECT_FALSE(route({.http = "proxy", .no_proxy = "[::1]"}, "http://[::1]:8080/"));
}

TEST(ProxyRoutes, OnlyHttpProxiesAreSupported) {
  try {
    ProxyRoutes({.https = "https://user:secret@proxy:443"});
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), "proxy 'https://...': only http:// proxies are supported");
  }
  EXPECT_THROW(ProxyRoutes({.http = "proxy:99999"}), InvalidArgument);
}

TEST(ProxyRoutes, TheEnvironmentIsReadLowercaseFirst) {
  ScopedEnvironment environment(
      {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"});
  environment.set("HTTP_PROXY", "upper:1");
  environment.set("https_proxy", "lower:2");
  environment.set("HTTPS_PROXY", "upper:2");
  environment.set("NO_PROXY", "example.com");
  const ProxyOptions options = proxies_from_environment();
  EXPECT_EQ(options.http, "upper:1");
  EXPECT_EQ(options.https, "lower:2");
  EXPECT_EQ(options.no_proxy, "example.com");
}

// nginx serving object.bin over plain HTTP and over TLS.
class HttpProxies : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!NginxServer::available() || !Certificates::available()) return;
    object_ = testing::random_bytes(proxied_size, 33);
    root_ = std::make_unique<TempDir>();
    std::ofstream(root_->path() / "object.bin", std::ios::binary) << object_;
    pki_ = std::make_unique<TempDir>();
    certificates_ = Certificates::generate(pki_->path());
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{.root = root_->path()});
    tls_ = std::make_unique<NginxServer>(
        NginxServer::Options{.root = root_->path(),
                             .certificate = certificates_.server_certificate,
                             .key = certificates_.server_key});
  }

  static void TearDownTestSuite() {
    nginx_.reset();
    tls_.reset();
    pki_.reset();
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

  static HttpOptions through(ProxyOptions proxies) {
    HttpOptions options;
    options.ca_file = certificates_.ca;
    options.max_retries = 0;
    options.proxies = std::move(proxies);
    return options;
  }

  // The size of object.bin and the object in two ranges, checked byte for byte.
  void read_whole(HttpStore& store) {
    ASSERT_EQ(testing::run_task(io_, store.size("/object.bin")), proxied_size);
    const std::string bytes =
        testing::read_string(io_, store, "/object.bin", 0, 1000) +
        testing::read_string(io_, store, "/object.bin", 1000, proxied_size - 1000);
    EXPECT_TRUE(bytes == object_) << "the bytes differ";
  }

  static inline std::string object_;
  static inline std::unique_ptr<TempDir> root_;
  static inline std::unique_ptr<TempDir> pki_;
  static inline Certificates certificates_;
  static inline std::unique_ptr<NginxServer> nginx_;
  static inline std::unique_ptr<NginxServer> tls_;
  asio::io_context io_;
};

TEST_F(HttpProxies, PlainHttpIsForwardedWithAbsoluteUrls) {
  ForwardProxy proxy;
  HttpStore store(io_.get_executor(), Url::parse(nginx_->base_url()),
                  through({.http = proxy.url(), .https = "http://127.0.0.1:1"}));
  read_whole(store);
  const std::string url = nginx_->base_url() + "/object.bin";
  EXPECT_EQ(proxy.requests(),
            (std::vector<std::string>{"HEAD " + url + " HTTP/1.1", "GET " + url + " HTTP/1.1",
                                      "GET " + url + " HTTP/1.1"}));
  EXPECT_EQ(proxy.authorizations(), std::vector<std::string>(3, ""));
}

TEST_F(HttpProxies, HttpsGoesThroughATunnel) {
  ForwardProxy proxy;
  HttpStore store(io_.get_executor(), Url::parse(tls_->base_url()),
                  through({.http = "http://127.0.0.1:1", .https = proxy.url()}));
  read_whole(store);
  EXPECT_EQ(
      proxy.requests(),
      std::vector<std::string>{"CONNECT 127.0.0.1:" + std::to_string(tls_->port()) + " HTTP/1.1"});
  EXPECT_EQ(store.stats().connections, 1u);
}

TEST_F(HttpProxies, CredentialsInTheProxyUrlAreSentToTheProxy) {
  ForwardProxy proxy;
  const std::string with_credentials =
      "http://user:p%40ss@127.0.0.1:" + std::to_string(proxy.port());
  HttpStore plain(io_.get_executor(), Url::parse(nginx_->base_url()),
                  through({.http = with_credentials}));
  read_whole(plain);
  HttpStore tls(io_.get_executor(), Url::parse(tls_->base_url()),
                through({.https = with_credentials}));
  read_whole(tls);
  EXPECT_EQ(proxy.authorizations(), std::vector<std::string>(4, "Basic dXNlcjpwQHNz"));
}

TEST_F(HttpProxies, NoProxyGoesDirectly) {
  ForwardProxy proxy;
  HttpStore plain(io_.get_executor(), Url::parse(nginx_->base_url()),
                  through({.http = proxy.url(), .https = proxy.url(), .no_proxy = "127.0.0.1"}));
  read_whole(plain);
  HttpStore tls(io_.get_executor(), Url::parse(tls_->base_url()),
                through({.http = proxy.url(),
                         .https = proxy.url(),
                         .no_proxy = "localhost,127.0.0.1:" + std::to_string(tls_->port())}));
  read_whole(tls);
  EXPECT_TRUE(proxy.requests().empty());
}

TEST_F(HttpProxies, TheEnvironmentNamesTheProxyByDefault) {
  ForwardProxy proxy;
  ScopedEnvironment environment(
      {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"});
  environment.set("HTTPS_PROXY", proxy.url());
  HttpOptions options;
  options.ca_file = certificates_.ca;
  HttpStore store(io_.get_executor(), Url::parse(tls_->base_url()), options);
  read_whole(store);
  EXPECT_EQ(proxy.requests().size(), 1u);
}

TEST_F(HttpProxies, AProxyRefusingTheTunnelIsAClearError) {
  for (const unsigned status : {407u, 403u}) {
    ForwardProxy proxy({.refuse_connect = status});
    HttpStore store(io_.get_executor(), Url::parse(tls_->base_url()),
                    through({.https = proxy.url()}));
    try {
      testing::run_task(io_, store.size("/object.bin"));
      FAIL() << "no error";
    } catch (const StorageError& error) {
      EXPECT_EQ(
          std::string(error.what()),
          tls_->base_url() + "/object.bin: proxy " + proxy.url() +
              " refused CONNECT to 127.0.0.1:" + std::to_string(tls_->port()) + ": " +
              (status == 407 ? "HTTP 407 Proxy Authentication Required" : "HTTP 403 Forbidden"));
      EXPECT_FALSE(error.transient());
    }
  }
}

TEST_F(HttpProxies, AnUnreachableProxyIsNamed) {
  // A bound socket that does not listen refuses connections, and keeps its port from others.
  asio::ip::tcp::socket closed(io_, {asio::ip::address_v4::loopback(), 0});
  const std::string proxy = "http://127.0.0.1:" + std::to_string(closed.local_endpoint().port());
  HttpStore store(io_.get_executor(), Url::parse(nginx_->base_url()), through({.http = proxy}));
  try {
    testing::run_task(io_, store.size("/object.bin"));
    FAIL() << "no error";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()), nginx_->base_url() + "/object.bin: proxy " + proxy +
                                             ": connection refused (nothing listens there)");
  }
}

}  // namespace
}  // namespace tensorstream
