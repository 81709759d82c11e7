#include "storage/azure/blob_api.hpp"

#include <charconv>
#include <cstring>
#include <pugixml.hpp>

#include "storage/percent_decode.hpp"
#include "storage/s3/sigv4.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::azure {
namespace {

std::string name_of(const pugi::xml_node& entry) {
  const pugi::xml_node name = entry.child("Name");
  const std::string_view text = name.child_value();
  if (!name.attribute("Encoded").as_bool()) return std::string(text);
  return percent_decode(text);
}

}  // namespace

std::string blob_target(const std::string& container, std::string_view name) {
  return "/" + container + "/" + s3::uri_encode(name, true);
}

std::string list_blobs_target(const std::string& container, const std::string& prefix,
                              bool delimited, std::uint32_t max_results,
                              const std::optional<std::string>& marker) {
  std::string target = "/" + container + "?restype=container&comp=list";
  if (delimited) target += "&delimiter=%2F";
  if (marker) target += "&marker=" + s3::uri_encode(*marker, false);
  target += "&maxresults=" + std::to_string(max_results);
  target += "&prefix=" + s3::uri_encode(prefix, false);
  return target;
}

ListingPage parse_blob_list(std::string_view body, const std::string& url) {
  const auto fail = [&](const std::string& why) {
    return FormatError(url + ": malformed List Blobs response: " + why);
  };
  pugi::xml_document document;
  if (const auto result = document.load_buffer(body.data(), body.size()); !result) {
    throw fail(result.description());
  }
  const pugi::xml_node root = document.child("EnumerationResults");
  if (!root) throw fail("no EnumerationResults element");
  ListingPage page;
  const pugi::xml_node blobs = root.child("Blobs");
  for (const pugi::xml_node blob : blobs.children("Blob")) {
    if (!blob.child("Name")) throw fail("a Blob without Name");
    std::string name = name_of(blob);
    const char* size_text = blob.child("Properties").child_value("Content-Length");
    std::uint64_t size = 0;
    const char* end = size_text + std::strlen(size_text);
    const auto [parsed_end, ec] = std::from_chars(size_text, end, size);
    if (ec != std::errc{} || parsed_end != end || parsed_end == size_text) {
      throw fail("Content-Length '" + std::string(size_text) + "' of '" + name + "'");
    }
    page.objects.push_back(ObjectInfo{std::move(name), size});
  }
  for (const pugi::xml_node prefix : blobs.children("BlobPrefix")) {
    if (!prefix.child("Name")) throw fail("a BlobPrefix without Name");
    page.prefixes.push_back(name_of(prefix));
  }
  const std::string_view marker = root.child_value("NextMarker");
  if (!marker.empty()) page.next_token = std::string(marker);
  return page;
}

}  // namespace tensorstream::azure
