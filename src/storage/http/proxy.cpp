#include "storage/http/proxy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include "base/ascii.hpp"
#include "storage/base64.hpp"
#include "storage/environment.hpp"
#include "storage/percent_decode.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

// curl's default for a proxy without a port.
constexpr std::uint16_t default_proxy_port = 1080;

// "host[:port]" or "[v6]:port": the host without brackets and the port, 0 when none is given.
std::pair<std::string_view, std::string_view> split_port(std::string_view authority) {
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return {authority, {}};
    const std::string_view port = close + 1 < authority.size() && authority[close + 1] == ':'
                                      ? authority.substr(close + 2)
                                      : std::string_view{};
    return {authority.substr(1, close - 1), port};
  }
  const auto colon = authority.find(':');
  // More than one colon: an IPv6 literal without brackets, which has no port.
  if (colon == std::string_view::npos || authority.find(':', colon + 1) != std::string_view::npos) {
    return {authority, {}};
  }
  return {authority.substr(0, colon), authority.substr(colon + 1)};
}

std::optional<std::uint16_t> parse_port(std::string_view digits) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

std::optional<Proxy> parse_proxy(std::string_view text) {
  text = ascii_trim(text);
  if (text.empty()) return std::nullopt;
  std::string_view rest = text;
  if (const auto scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    if (ascii_lowercase(rest.substr(0, scheme_end)) != "http") {
      throw InvalidArgument("proxy '" + std::string(rest.substr(0, scheme_end)) +
                            "://...': only http:// proxies are supported");
    }
    rest.remove_prefix(scheme_end + 3);
  }
  rest = rest.substr(0, rest.find('/'));
  Proxy proxy;
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const auto colon = userinfo.find(':');
    std::string credentials = percent_decode(userinfo.substr(0, colon));
    credentials += ':';
    if (colon != std::string_view::npos) credentials += percent_decode(userinfo.substr(colon + 1));
    proxy.authorization = "Basic " + base64_encode(credentials);
    rest.remove_prefix(at + 1);
  }
  const auto [host, port] = split_port(rest);
  proxy.url = "http://" + std::string(rest);
  if (host.empty()) throw InvalidArgument("proxy '" + proxy.url + "': no host");
  proxy.host = std::string(host);
  proxy.port = default_proxy_port;
  if (!port.empty()) {
    const auto number = parse_port(port);
    if (!number) throw InvalidArgument("proxy '" + proxy.url + "': bad port");
    proxy.port = *number;
  }
  return proxy;
}

std::string first_set(const char* lower, const char* upper) {
  std::string value = environment(lower);
  return value.empty() ? environment(upper) : value;
}

}  // namespace

ProxyRoutes::ProxyRoutes(const ProxyOptions& options)
    : http_(parse_proxy(options.http)), https_(parse_proxy(options.https)) {
  std::string_view list = options.no_proxy;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view entry = ascii_trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (entry.empty()) continue;
    auto [host, port] = split_port(entry);
    if (host.starts_with('.')) host.remove_prefix(1);
    bypass_.push_back({ascii_lowercase(host), parse_port(port).value_or(0)});
  }
}

std::optional<Proxy> ProxyRoutes::route(const Url& origin) const {
  const auto& proxy = origin.scheme == "https" ? https_ : http_;
  if (!proxy) return std::nullopt;
  const std::string host = ascii_lowercase(origin.host);
  const bool bypassed = std::any_of(bypass_.begin(), bypass_.end(), [&](const Bypass& entry) {
    if (entry.host == "*") return true;
    if (entry.port != 0 && entry.port != origin.port) return false;
    return host == entry.host || (host.size() > entry.host.size() && host.ends_with(entry.host) &&
                                  host[host.size() - entry.host.size() - 1] == '.');
  });
  if (bypassed) return std::nullopt;
  return proxy;
}

ProxyOptions proxies_from_environment() {
  return {.http = first_set("http_proxy", "HTTP_PROXY"),
          .https = first_set("https_proxy", "HTTPS_PROXY"),
          .no_proxy = first_set("no_proxy", "NO_PROXY")};
}

}  // namespace tensorstream
