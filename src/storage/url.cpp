#include "tensorstream/storage/url.hpp"

#include <charconv>
#include <string>

#include "base/ascii.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/scheme.hpp"

namespace tensorstream {
namespace {

std::uint16_t default_port(std::string_view name) {
  const auto scheme = find_scheme(name);
  return scheme ? scheme->default_port : 0;
}

// "file, http, https, s3 or gs"
std::string known_schemes() {
  const std::vector<std::string> names = scheme_names();
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

// Why a URL with nothing after "SCHEME://" names nothing, and what to write: the stores' own
// words for what comes first (a bucket, a container, a repository) rather than "host".
std::string missing_authority(std::string_view scheme) {
  if (scheme == "s3" || scheme == "gs") {
    return "name a bucket: " + std::string(scheme) + "://BUCKET/PATH";
  }
  if (scheme == "az") return "name a container: az://CONTAINER/PATH";
  if (scheme == "hf") return "name a repository: hf://ORG/NAME[@REVISION]/PATH";
  return "missing host";
}

}  // namespace

Url Url::parse(std::string_view text) {
  const auto fail = [&](std::string_view why) -> InvalidArgument {
    return InvalidArgument("invalid URL '" + redact_query(text) + "': " + std::string(why));
  };
  Url url;
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) {
    if (text.empty()) throw fail("empty");
    // "s3:/bucket/x" is a mistyped URL far more often than a local folder named "s3:", and
    // taking it as a path would write the user's model somewhere they did not mean.
    const auto colon = text.find(':');
    if (colon != std::string_view::npos && find_scheme(ascii_lowercase(text.substr(0, colon)))) {
      throw fail("a URL needs '" + ascii_lowercase(text.substr(0, colon)) +
                 "://'; write ./" + std::string(text) + " for a local path");
    }
    url.scheme = "file";
    url.path = std::string(text);
    return url;
  }
  url.scheme = ascii_lowercase(text.substr(0, scheme_end));
  std::string_view rest = text.substr(scheme_end + 3);
  const auto scheme = find_scheme(url.scheme);
  if (!scheme) {
    throw fail("unsupported scheme '" + url.scheme + "' (use " + known_schemes() + ")");
  }
  if (scheme->form == UrlForm::path) {
    if (rest.empty() || rest.front() != '/') {
      throw fail(url.scheme + " URLs need an absolute path");
    }
    url.path = std::string(rest);
    return url;
  }
  const auto authority_end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authority_end);
  rest = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (authority.empty()) throw fail(missing_authority(url.scheme));

  const bool bucket = scheme->form == UrlForm::bucket;
  url.port = scheme->default_port;
  const auto colon = authority.rfind(':');
  const bool bracketed = authority.front() == '[';
  if (colon != std::string_view::npos && (!bracketed || authority[colon - 1] == ']')) {
    if (bucket) throw fail("buckets take no port");
    const auto digits = authority.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || value == 0 || value > 65535) {
      throw fail("bad port '" + std::string(digits) + "'");
    }
    url.port = static_cast<std::uint16_t>(value);
    authority = authority.substr(0, colon);
  }
  if (bracketed) {
    if (authority.size() < 3 || authority.back() != ']') throw fail("bad IPv6 address");
    authority = authority.substr(1, authority.size() - 2);
    // Brackets inside would not survive printing the URL back (found by url_fuzz).
    if (authority.find_first_of("[]") != std::string_view::npos) throw fail("bad IPv6 address");
  }
  if (authority.empty()) throw fail("missing host");
  url.host = std::string(authority);

  // Object keys are taken as they are written, '?' included, as the AWS and gcloud CLIs do.
  const auto question = bucket ? std::string_view::npos : rest.find('?');
  url.path = std::string(rest.substr(0, question));
  if (question != std::string_view::npos) url.query = std::string(rest.substr(question + 1));
  if (url.path.empty()) url.path.push_back('/');
  return url;
}

std::string Url::origin() const {
  if (host.empty()) return scheme + "://";
  std::string text = scheme;
  text += "://";
  const bool ipv6 = host.find(':') != std::string::npos;
  if (ipv6) text += '[';
  text += host;
  if (ipv6) text += ']';
  if (port != 0 && port != default_port(scheme)) {
    text += ':';
    text += std::to_string(port);
  }
  return text;
}

std::string Url::str() const {
  if (scheme == "file") return path;
  return origin() + path + (query.empty() ? "" : "?…");
}

std::string Url::str_with_query() const {
  if (scheme == "file") return path;
  return origin() + path + (query.empty() ? "" : "?" + query);
}

std::string redact_query(std::string_view url) {
  const auto scheme_end = url.find("://");
  const auto question = url.find('?');
  if (scheme_end == std::string_view::npos || question == std::string_view::npos ||
      question < scheme_end || question + 1 == url.size()) {
    return std::string(url);
  }
  const auto scheme = find_scheme(ascii_lowercase(url.substr(0, scheme_end)));
  if (!scheme || scheme->form != UrlForm::server) return std::string(url);
  return std::string(url.substr(0, question)) + "?…";
}

}  // namespace tensorstream
