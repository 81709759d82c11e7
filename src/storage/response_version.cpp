#include "storage/response_version.hpp"

#include <chrono>
#include <string_view>

#include "storage/http/http_date.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

bool is_weak(const std::string& etag) { return etag.starts_with("W/"); }

// The weak comparison of RFC 9110: a server may mark the same tag weak in one response and not
// in another (HEAD and GET, or behind a proxy), which is no change of the object.
std::string_view opaque_tag(std::string_view etag) {
  return etag.starts_with("W/") ? etag.substr(2) : etag;
}

std::string changed(const std::string& what, const std::string& from, const std::string& to) {
  return "the object changed while it was being read (" + what + " " + from + " became " + to +
         "); restart the stream";
}

}  // namespace

std::string ResponseVersion::describe() const {
  if (!generation.empty()) return "generation " + generation;
  if (!etag.empty()) return "ETag " + etag;
  if (!last_modified.empty()) return "Last-Modified " + last_modified;
  return "no version";
}

ObjectVersion object_version(const ResponseVersion& version, std::string object, bool settled) {
  if (!version.generation.empty()) {
    return ObjectVersion::generation(std::move(object), version.generation);
  }
  if (!version.etag.empty()) return ObjectVersion::etag(std::move(object), version.etag, settled);
  return ObjectVersion::last_modified(std::move(object), version.last_modified, settled);
}

ResponseVersion version_of(const boost::beast::http::fields& response) {
  ResponseVersion version;
  version.generation = std::string(response["x-goog-generation"]);
  if (!version.generation.empty()) return version;
  version.etag = std::string(response[boost::beast::http::field::etag]);
  version.last_modified = std::string(response[boost::beast::http::field::last_modified]);
  if (const auto modified = parse_http_date(version.last_modified)) {
    const auto date = parse_http_date(response[boost::beast::http::field::date]);
    version.recent = date.value_or(std::chrono::system_clock::now()) - *modified <=
                     std::chrono::seconds(1);
  }
  return version;
}

std::optional<std::pair<std::string_view, std::string_view>> version_condition(
    const ResponseVersion& pinned) {
  if (!pinned.generation.empty()) return std::nullopt;
  if (!pinned.etag.empty() && !is_weak(pinned.etag)) {
    return std::pair<std::string_view, std::string_view>{"If-Match", pinned.etag};
  }
  if (!pinned.last_modified.empty()) {
    return std::pair<std::string_view, std::string_view>{"If-Unmodified-Since",
                                                         pinned.last_modified};
  }
  return std::nullopt;
}

std::string version_conditions(const ResponseVersion& pinned) {
  const auto condition = version_condition(pinned);
  if (!condition) return {};
  return std::string(condition->first) + ": " + std::string(condition->second) + "\r\n";
}

std::optional<std::string> version_change(const ResponseVersion& pinned,
                                          const ResponseVersion& seen) {
  if (!pinned.generation.empty() && !seen.generation.empty()) {
    if (pinned.generation == seen.generation) return std::nullopt;
    return changed("generation", pinned.generation, seen.generation);
  }
  if (!pinned.etag.empty() && !seen.etag.empty()) {
    if (opaque_tag(pinned.etag) == opaque_tag(seen.etag)) return std::nullopt;
    return changed("ETag", pinned.etag, seen.etag);
  }
  if (!pinned.last_modified.empty() && !seen.last_modified.empty()) {
    if (pinned.last_modified == seen.last_modified) return std::nullopt;
    return changed("Last-Modified", pinned.last_modified, seen.last_modified);
  }
  return std::nullopt;
}

std::string version_precondition_failed(const ResponseVersion& pinned) {
  return "the object changed while it was being read (" + pinned.describe() +
         " is no longer current: HTTP 412 Precondition Failed); restart the stream";
}

std::string version_range_gone(const ResponseVersion& pinned, const std::string& asked) {
  return "the object changed while it was being read (" + asked + " lay inside the " +
         std::to_string(pinned.size.value_or(0)) + " bytes of " + pinned.describe() +
         " and are now beyond its end: HTTP 416 Range Not Satisfiable); restart the stream";
}

void pin_version(ObjectPins<ResponseVersion>& pins, const std::string& key, const std::string& url,
                 const ResponseVersion& seen) {
  // Nothing to hold the object to; a later response that names a version pins that one.
  if (seen.empty()) return;
  const ResponseVersion pinned = pins.pin(key, seen);
  if (auto change = version_change(pinned, seen)) throw StorageError(url, std::move(*change));
}

}  // namespace tensorstream
