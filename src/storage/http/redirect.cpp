#include "storage/http/redirect.hpp"

#include <cctype>

namespace tensorstream {
namespace {

bool has_scheme(std::string_view reference) {
  const auto colon = reference.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  if (!std::isalpha(static_cast<unsigned char>(reference.front()))) return false;
  for (const char c : reference.substr(0, colon)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

// RFC 3986 section 5.2.4.
std::string without_dot_segments(std::string_view path) {
  std::string output;
  while (!path.empty()) {
    if (path.starts_with("../")) {
      path.remove_prefix(3);
    } else if (path.starts_with("./")) {
      path.remove_prefix(2);
    } else if (path.starts_with("/./")) {
      path.remove_prefix(2);
    } else if (path == "/.") {
      path = "/";
    } else if (path.starts_with("/../") || path == "/..") {
      path = path.size() == 3 ? std::string_view("/") : path.substr(3);
      const auto last = output.rfind('/');
      output.resize(last == std::string::npos ? 0 : last);
    } else if (path == "." || path == "..") {
      path = {};
    } else {
      const auto next = path.find('/', 1);
      output += path.substr(0, next);
      path = next == std::string_view::npos ? std::string_view{} : path.substr(next);
    }
  }
  return output;
}

}  // namespace

std::string resolve_location(std::string_view origin, std::string_view target,
                             std::string_view location) {
  location = location.substr(0, location.find('#'));
  if (has_scheme(location)) return std::string(location);
  if (location.starts_with("//")) {
    return std::string(origin.substr(0, origin.find(':'))) + ":" + std::string(location);
  }
  const std::string_view path = target.substr(0, target.find('?'));
  std::string resolved(origin);
  if (location.empty()) return resolved + std::string(target);
  if (location.front() == '?') return resolved + std::string(path) + std::string(location);
  const auto query = location.find('?');
  const std::string_view reference_path = location.substr(0, query);
  const std::string_view reference_query =
      query == std::string_view::npos ? std::string_view{} : location.substr(query);
  std::string merged;
  if (reference_path.front() == '/') {
    merged = reference_path;
  } else {
    merged = path.substr(0, path.rfind('/') + 1);
    merged += reference_path;
  }
  resolved += without_dot_segments(merged);
  resolved += reference_query;
  return resolved;
}

}  // namespace tensorstream
