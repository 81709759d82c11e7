#pragma once
// The version of a remote object as an HTTP response names it, which a store pins at the
// object's first access so that every later read can insist on the same version. What the
// store tells its callers of it is an ObjectVersion (object_version()).

#include <boost/beast/http/fields.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "storage/object_pins.hpp"
#include "tensorstream/storage/object_version.hpp"

namespace tensorstream {

/// What a response tells of the object's version: the generation (GCS), else the ETag, else
/// the Last-Modified date identifies it; each is kept, as If-Match and If-Unmodified-Since need
/// them. Empty when the server told none of them.
struct ResponseVersion {
  std::string generation{};     ///< GCS's object generation, a decimal number.
  std::string etag{};           ///< The ETag header as sent, quotes and any W/ included.
  std::string last_modified{};  ///< The Last-Modified header as sent.
  /// The object's size, where the response that named the version said it (a HEAD's
  /// Content-Length, a 206's Content-Range): no part of the identity, but a range inside it that
  /// the server now calls unsatisfiable means the object was replaced by a shorter one.
  std::optional<std::uint64_t> size{};
  /// Whether Last-Modified was within a second of the response's Date (else of this machine's
  /// clock): a rewrite later in that second may keep every field above. No part of the identity.
  bool recent = false;

  /// Whether nothing identifies the version.
  bool empty() const { return generation.empty() && etag.empty() && last_modified.empty(); }

  /// The strongest identity known, for messages: `generation 7`, `ETag "a"` or
  /// `Last-Modified Tue, 01 Dec 2026 05:00:00 GMT`.
  std::string describe() const;

  bool operator==(const ResponseVersion& other) const {
    return generation == other.generation && etag == other.etag &&
           last_modified == other.last_modified && size == other.size;
  }
};

/// The version a response names in its x-goog-generation, ETag and Last-Modified headers. A
/// generation, where given, is the whole identity: GCS's ETags are not usable in If-Match on the
/// JSON API.
ResponseVersion version_of(const boost::beast::http::fields& response);

/// The header that makes a request fail with 412 unless the object is still `pinned`, as
/// version_conditions() says; its value points into `pinned`.
std::optional<std::pair<std::string_view, std::string_view>> version_condition(
    const ResponseVersion& pinned);

/// Header lines ("Name: value\r\n") that make a request fail with 412 unless the object is still
/// `pinned`: If-Match with a strong ETag, else If-Unmodified-Since with the Last-Modified date;
/// nothing for a generation (GCS asks for ifGenerationMatch in the query) or an empty version.
/// A weak ETag never matches in If-Match, so it is only compared afterwards.
std::string version_conditions(const ResponseVersion& pinned);

/// Why `seen` is not the version `pinned`, e.g. `the object changed while it was being read
/// (ETag "a" became "b"); restart the stream`; nullopt when they agree or share no identity to
/// compare.
std::optional<std::string> version_change(const ResponseVersion& pinned,
                                          const ResponseVersion& seen);

/// Why a read made conditional on `pinned` was answered 412 Precondition Failed.
std::string version_precondition_failed(const ResponseVersion& pinned);

/// Why `asked` (`bytes 10-19`), a range inside the pinned object's size, was answered 416 Range
/// Not Satisfiable: a server that checks the range before If-Match (s3rver while it rewrites an
/// object) says so of a shorter object put in its place.
std::string version_range_gone(const ResponseVersion& pinned, const std::string& asked);

/// Pins `seen` as the version of `key` at its first access that names one; afterwards throws
/// StorageError naming `url` when `seen` is another version than the one pinned.
void pin_version(ObjectPins<ResponseVersion>& pins, const std::string& key, const std::string& url,
                 const ResponseVersion& seen);

/// What `version` is to the store's callers: its strongest identity (as describe() picks it) of
/// the object `object` (ObjectStore::object_identity), settled as `settled` says.
ObjectVersion object_version(const ResponseVersion& version, std::string object,
                             bool settled = true);

/// For pinned_stat(): the object's size, where the response that named the version said it.
inline std::optional<std::uint64_t> pinned_size(const ResponseVersion& version) {
  return version.size;
}

}  // namespace tensorstream
