#pragma once
/// @file
/// ObjectVersion: which bytes of an object a store read.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// One version of one object, as the store that read it names it (ObjectStore::stat). Two
/// versions are equal when they name the same bytes: the same kind and value of the same object,
/// or the same content id wherever it lies. A cache keeps an entry per version (cache_key()), and
/// the members of a distributed stream compare theirs before they share bytes; describe() is for
/// messages only.
///
///     // A store of a scheme of its own that knows a version of its objects:
///     co_return ObjectStat{size, ObjectVersion::other(object_identity(key), revision)};
class TENSORSTREAM_API ObjectVersion {
 public:
  /// What the version is made of.
  enum class Kind {
    none,           ///< The store knows no version (a server that sends no validators).
    etag,           ///< An HTTP entity tag as sent, quotes and any `W/` included.
    generation,     ///< A GCS object generation, a decimal number.
    last_modified,  ///< An HTTP Last-Modified date as sent.
    file,           ///< A file's device, inode, size and modification time.
    content,        ///< An id of the bytes themselves, whichever object holds them.
    other,          ///< A token of a store outside the library.
  };

  /// No version: the store cannot tell one version of the object from another.
  ObjectVersion() = default;

  // Each factory takes `object`, what names the object apart from every other store's
  // (ObjectStore::object_identity), and gives no version (Kind::none) for an empty value.

  /// The ETag `etag` (`"a1"`, `W/"a1"`) of `object`; `settled` as settled() says.
  static ObjectVersion etag(std::string object, std::string etag, bool settled = true);
  /// The GCS generation `generation` ("7") of `object`.
  static ObjectVersion generation(std::string object, std::string generation);
  /// The Last-Modified date `date` of `object`, as the server sent it; `settled` as settled()
  /// says.
  static ObjectVersion last_modified(std::string object, std::string date, bool settled = true);
  /// The file `object` as stat(2) found it: a file replaced by another has another inode, one
  /// rewritten in place another modification time. `modified` counts from the Unix epoch.
  static ObjectVersion file(std::string object, std::uint64_t device, std::uint64_t inode,
                            std::uint64_t size, std::chrono::nanoseconds modified);
  /// The content id `id` (a Hugging Face blob's), which names the same bytes in any object.
  static ObjectVersion content(std::string id);
  /// The token `token` that a store of a scheme of its own tells versions of `object` apart by;
  /// `settled` as settled() says.
  static ObjectVersion other(std::string object, std::string token, bool settled = true);

  /// What the version is made of.
  Kind kind() const { return kind_; }
  /// The ETag, generation, date, content id or token; a file's version in a form of its own.
  const std::string& value() const { return value_; }
  /// The object's identity; empty for Kind::content and Kind::none.
  const std::string& object() const { return object_; }
  /// Whether the version tells this object's bytes from those of any later change. False where
  /// a rewrite could keep it: a weak ETag, or a Last-Modified within a second of the response's
  /// Date (an ETag made of the modification time in seconds, as nginx's, is the same for two
  /// writes of one second). A cache trusts what it kept of an unsettled version only offline.
  /// No part of equality.
  bool settled() const { return settled_; }
  /// Whether no version is known.
  bool empty() const { return kind_ == Kind::none; }

  /// The version as messages name it: `ETag "a1"`, `generation 7`,
  /// `Last-Modified Tue, 01 Dec 2026 05:00:00 GMT`,
  /// `inode 12 of device 2049, 4096 bytes, modified 2026-12-01 05:00:00.123456789 UTC`,
  /// `blob <id>`, another store's token as it gave it; empty for no version.
  std::string describe() const;

  /// What names the version in a cache, the same in every process and for every URL that names
  /// the object: its kind, value and object identity (a storage account included where the URL
  /// leaves it out); the content id alone for Kind::content. Empty for no version.
  std::string cache_key() const;

  /// The version as one line of text without tabs, which decode() reads back whole (settled()
  /// included): what a cache's files and the members of a distributed stream exchange.
  std::string encode() const;

  /// The version `text` (from encode()) names; nullopt when it names none of this form.
  static std::optional<ObjectVersion> decode(std::string_view text);

  /// Whether both name the same bytes (settled() aside).
  bool operator==(const ObjectVersion& other) const;

 private:
  ObjectVersion(Kind kind, std::string object, std::string value, bool settled);

  Kind kind_ = Kind::none;
  std::string object_;
  std::string value_;
  bool settled_ = true;
};

}  // namespace tensorstream
