#pragma once
// Which proxy, if any, a connection goes through, as curl decides it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// An HTTP proxy.
struct Proxy {
  std::string host;  ///< Name or IP literal, without brackets.
  std::uint16_t port = 0;
  /// Value of the Proxy-Authorization header ("Basic ..."); empty without credentials.
  std::string authorization;
  /// "http://host:port", without credentials, for messages.
  std::string url;
};

/// The proxies of a client and the hosts that bypass them.
class ProxyRoutes {
 public:
  /// Throws InvalidArgument naming the proxy for one that is not an http:// URL or has a bad port.
  explicit ProxyRoutes(const ProxyOptions& options);

  /// The proxy that connections to `origin` (http or https) go through; nullopt: directly.
  std::optional<Proxy> route(const Url& origin) const;

 private:
  struct Bypass {
    std::string host;        // Lowercase, without a leading dot; "*" for all.
    std::uint16_t port = 0;  // 0: any.
  };

  std::optional<Proxy> http_;
  std::optional<Proxy> https_;
  std::vector<Bypass> bypass_;
};

/// http_proxy, https_proxy and no_proxy from the environment, each lowercase first, then
/// uppercase.
ProxyOptions proxies_from_environment();

}  // namespace tensorstream
