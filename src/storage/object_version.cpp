#include "tensorstream/storage/object_version.hpp"

#include <array>
#include <charconv>
#include <utility>

#include "storage/file/file_time.hpp"

namespace tensorstream {
namespace {

struct KindName {
  ObjectVersion::Kind kind;
  std::string_view name;
};

// The kinds as encode() writes them; Kind::none is the whole text "none".
constexpr std::array<KindName, 6> version_kinds{{
    {ObjectVersion::Kind::etag, "etag"},
    {ObjectVersion::Kind::generation, "generation"},
    {ObjectVersion::Kind::last_modified, "last-modified"},
    {ObjectVersion::Kind::file, "file"},
    {ObjectVersion::Kind::content, "content"},
    {ObjectVersion::Kind::other, "other"},
}};

std::string_view name_of_kind(ObjectVersion::Kind kind) {
  for (const KindName& known : version_kinds) {
    if (known.kind == kind) return known.name;
  }
  return "none";
}

std::optional<ObjectVersion::Kind> kind_named(std::string_view name) {
  for (const KindName& known : version_kinds) {
    if (known.name == name) return known.kind;
  }
  return std::nullopt;
}

// A field of the encoded form: '%', the separating space and control characters (line breaks
// and tabs among them) as %XX, so that the form is one line of fields.
std::string escaped(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '%' || c == ' ' || byte < 0x20 || byte == 0x7f) {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> unescaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned byte = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    const auto [end, error] = std::from_chars(text.data() + i + 1, text.data() + i + 3, byte, 16);
    if (error != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(byte);
    i += 2;
  }
  return out;
}

// A file's version as value() holds it: "DEVICE:INODE:SIZE:NANOSECONDS", the modification time
// in nanoseconds since the epoch.
struct FileFields {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t modified = 0;
};

std::string file_value(const FileFields& fields) {
  return std::to_string(fields.device) + ":" + std::to_string(fields.inode) + ":" +
         std::to_string(fields.size) + ":" + std::to_string(fields.modified);
}

std::optional<FileFields> parse_file_value(std::string_view value) {
  FileFields fields;
  const char* at = value.data();
  const char* const end = value.data() + value.size();
  const auto field = [&](auto& number, bool last) {
    const auto [next, error] = std::from_chars(at, end, number);
    if (error != std::errc() || next == at) return false;
    at = next;
    if (last) return at == end;
    if (at == end || *at != ':') return false;
    ++at;
    return true;
  };
  if (!field(fields.device, false) || !field(fields.inode, false) || !field(fields.size, false) ||
      !field(fields.modified, true)) {
    return std::nullopt;
  }
  return fields;
}

// "inode 12 of device 2049, 4096 bytes, modified 2026-12-01 05:40:01.123456789 UTC"
std::string describe_file(const FileFields& fields) {
  constexpr std::int64_t billion = 1'000'000'000;
  std::int64_t seconds = fields.modified / billion;
  std::int64_t nanoseconds = fields.modified % billion;
  if (nanoseconds < 0) {
    --seconds;
    nanoseconds += billion;
  }
  return "inode " + std::to_string(fields.inode) + " of device " + std::to_string(fields.device) +
         ", " + std::to_string(fields.size) + " bytes, modified " +
         format_file_time(seconds, nanoseconds);
}

}  // namespace

ObjectVersion::ObjectVersion(Kind kind, std::string object, std::string value, bool settled)
    : kind_(value.empty() ? Kind::none : kind),
      object_(value.empty() || kind == Kind::content ? std::string() : std::move(object)),
      value_(std::move(value)),
      settled_(value_.empty() || settled) {}

ObjectVersion ObjectVersion::etag(std::string object, std::string etag, bool settled) {
  return {Kind::etag, std::move(object), std::move(etag), settled};
}

ObjectVersion ObjectVersion::generation(std::string object, std::string generation) {
  return {Kind::generation, std::move(object), std::move(generation), true};
}

ObjectVersion ObjectVersion::last_modified(std::string object, std::string date, bool settled) {
  return {Kind::last_modified, std::move(object), std::move(date), settled};
}

ObjectVersion ObjectVersion::file(std::string object, std::uint64_t device, std::uint64_t inode,
                                  std::uint64_t size, std::chrono::nanoseconds modified) {
  return {Kind::file, std::move(object),
          file_value({device, inode, size, static_cast<std::int64_t>(modified.count())}), true};
}

ObjectVersion ObjectVersion::content(std::string id) {
  return {Kind::content, std::string(), std::move(id), true};
}

ObjectVersion ObjectVersion::other(std::string object, std::string token, bool settled) {
  return {Kind::other, std::move(object), std::move(token), settled};
}

std::string ObjectVersion::describe() const {
  switch (kind_) {
    case Kind::etag:
      return "ETag " + value_;
    case Kind::generation:
      return "generation " + value_;
    case Kind::last_modified:
      return "Last-Modified " + value_;
    case Kind::file:
      // Made by file() or read back by decode(), both of which hold the form.
      return describe_file(*parse_file_value(value_));
    case Kind::content:
      return "blob " + value_;
    case Kind::other:
      return value_;
    case Kind::none:
      break;
  }
  return {};
}

std::string ObjectVersion::cache_key() const {
  if (empty()) return {};
  return std::string(name_of_kind(kind_)) + " " + escaped(value_) + " " + escaped(object_);
}

std::string ObjectVersion::encode() const {
  if (empty()) return "none";
  return std::string(name_of_kind(kind_)) + (settled_ ? " settled " : " unsettled ") +
         escaped(value_) + " " + escaped(object_);
}

std::optional<ObjectVersion> ObjectVersion::decode(std::string_view text) {
  if (text == "none") return ObjectVersion();
  // KIND SETTLED VALUE OBJECT, the last field empty for a content id.
  std::array<std::string_view, 4> fields;
  for (std::size_t i = 0; i + 1 < fields.size(); ++i) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    fields[i] = text.substr(0, space);
    text.remove_prefix(space + 1);
  }
  fields.back() = text;
  const auto [kind_name, settled, value_text, object_text] = fields;
  const std::optional<Kind> kind = kind_named(kind_name);
  if (!kind || (settled != "settled" && settled != "unsettled")) return std::nullopt;
  auto value = unescaped(value_text);
  auto object = unescaped(object_text);
  if (!value || value->empty() || !object) return std::nullopt;
  if (*kind == Kind::file && !parse_file_value(*value)) return std::nullopt;
  return ObjectVersion(*kind, std::move(*object), std::move(*value), settled == "settled");
}

bool ObjectVersion::operator==(const ObjectVersion& other) const {
  // A content id's object is empty: any object's copy of the bytes is the same version.
  return kind_ == other.kind_ && value_ == other.value_ && object_ == other.object_;
}

}  // namespace tensorstream
