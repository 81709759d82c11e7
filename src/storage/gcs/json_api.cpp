#include "storage/gcs/json_api.hpp"

#include <simdjson.h>

#include <charconv>

#include "tensorstream/error.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::gcs {
namespace {

// Names and sizes are all a listing needs; the full resources are about ten times larger.
constexpr std::string_view list_fields = "items(name,size),prefixes,nextPageToken";
// The generation pins the object for the reads that follow.
constexpr std::string_view metadata_fields = "size,generation";

std::string encode(std::string_view text) { return s3::uri_encode(text, false); }

FormatError malformed(const std::string& url, std::string_view what, std::string_view why) {
  return FormatError(url + ": malformed " + std::string(what) + " from the JSON API: " +
                     std::string(why));
}

// Sizes are int64 values written as decimal strings, so that JavaScript does not round them.
std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::uint64_t object_size(simdjson::dom::element object, const std::string& url,
                          std::string_view what) {
  std::string_view text;
  if (const auto error = object["size"].get(text)) {
    throw malformed(url, what, std::string("size: ") + simdjson::error_message(error));
  }
  const auto size = decimal(text);
  if (!size) throw malformed(url, what, "size \"" + std::string(text) + "\" is not a byte count");
  return *size;
}

std::string object_target(std::string_view bucket, std::string_view name) {
  return "/storage/v1/b/" + encode(bucket) + "/o/" + encode(name);
}

}  // namespace

std::string metadata_target(std::string_view bucket, std::string_view name) {
  return object_target(bucket, name) + "?fields=" + encode(metadata_fields);
}

std::string media_target(std::string_view bucket, std::string_view name,
                         std::string_view generation) {
  std::string target = object_target(bucket, name) + "?alt=media";
  if (!generation.empty()) target += "&ifGenerationMatch=" + encode(generation);
  return target;
}

std::string list_target(std::string_view bucket, std::string_view prefix, bool delimited,
                        const std::optional<std::string>& page_token) {
  std::string target = "/storage/v1/b/" + encode(bucket) + "/o?prefix=" + encode(prefix);
  if (delimited) target += "&delimiter=%2F";
  if (page_token) target += "&pageToken=" + encode(*page_token);
  return target + "&fields=" + encode(list_fields);
}

ObjectMetadata parse_object_metadata(std::string_view body, const std::string& url) {
  constexpr std::string_view what = "object metadata";
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::element object;
  if (const auto error = parser.parse(padded).get(object)) {
    throw malformed(url, what, simdjson::error_message(error));
  }
  ObjectMetadata metadata;
  metadata.size = object_size(object, url, what);
  std::string_view generation;
  const auto generation_error = object["generation"].get(generation);
  if (generation_error && generation_error != simdjson::NO_SUCH_FIELD) {
    throw malformed(url, what,
                    std::string("generation: ") + simdjson::error_message(generation_error));
  }
  if (!generation_error) {
    if (!decimal(generation)) {
      throw malformed(url, what,
                      "generation \"" + std::string(generation) + "\" is not a decimal number");
    }
    metadata.generation = std::string(generation);
  }
  return metadata;
}

ListingPage parse_objects_page(std::string_view body, const std::string& url) {
  constexpr std::string_view what = "object listing";
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::object resource;
  if (const auto error = parser.parse(padded).get(resource)) {
    throw malformed(url, what, simdjson::error_message(error));
  }
  ListingPage page;
  simdjson::dom::array items;
  const auto items_error = resource["items"].get(items);
  if (items_error && items_error != simdjson::NO_SUCH_FIELD) {
    throw malformed(url, what, std::string("items: ") + simdjson::error_message(items_error));
  }
  if (!items_error) {
    for (const auto item : items) {
      std::string_view name;
      if (const auto error = item["name"].get(name)) {
        throw malformed(url, what, std::string("name: ") + simdjson::error_message(error));
      }
      page.objects.push_back(ObjectInfo{std::string(name), object_size(item, url, what)});
    }
  }
  simdjson::dom::array prefixes;
  const auto prefixes_error = resource["prefixes"].get(prefixes);
  if (prefixes_error && prefixes_error != simdjson::NO_SUCH_FIELD) {
    throw malformed(url, what, std::string("prefixes: ") + simdjson::error_message(prefixes_error));
  }
  if (!prefixes_error) {
    for (const auto prefix : prefixes) {
      std::string_view name;
      if (const auto error = prefix.get(name)) {
        throw malformed(url, what, std::string("prefixes: ") + simdjson::error_message(error));
      }
      page.prefixes.emplace_back(name);
    }
  }
  std::string_view token;
  const auto token_error = resource["nextPageToken"].get(token);
  if (token_error && token_error != simdjson::NO_SUCH_FIELD) {
    throw malformed(url, what, std::string("nextPageToken: ") + simdjson::error_message(token_error));
  }
  if (!token_error && !token.empty()) page.next_token = std::string(token);
  return page;
}

}  // namespace tensorstream::gcs
