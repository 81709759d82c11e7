#include "storage/s3/list_objects.hpp"

#include <charconv>
#include <cstring>
#include <pugixml.hpp>

#include "tensorstream/error.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {

std::string list_objects_query(const std::string& prefix, bool delimited,
                               const std::optional<std::string>& token) {
  // Parameters in SigV4's canonical (sorted) order, so the signed and the sent query agree at a
  // glance.
  std::string query;
  if (token) query += "continuation-token=" + uri_encode(*token, false) + "&";
  if (delimited) query += "delimiter=%2F&";
  query += "list-type=2&prefix=" + uri_encode(prefix, false);
  return query;
}

ListingPage parse_list_objects(std::string_view body, const std::string& url) {
  const auto fail = [&](const std::string& why) {
    return FormatError(url + ": malformed ListObjectsV2 response: " + why);
  };
  pugi::xml_document document;
  if (const auto result = document.load_buffer(body.data(), body.size()); !result) {
    throw fail(result.description());
  }
  const pugi::xml_node root = document.child("ListBucketResult");
  if (!root) throw fail("no ListBucketResult element");

  ListingPage page;
  for (const pugi::xml_node contents : root.children("Contents")) {
    const pugi::xml_node key = contents.child("Key");
    if (!key) throw fail("an entry without Key");
    const char* size_text = contents.child_value("Size");
    std::uint64_t size = 0;
    const char* end = size_text + std::strlen(size_text);
    const auto [parsed_end, ec] = std::from_chars(size_text, end, size);
    if (ec != std::errc{} || parsed_end != end || parsed_end == size_text) {
      throw fail("Size '" + std::string(size_text) + "' of '" + key.child_value() + "'");
    }
    page.objects.push_back(ObjectInfo{key.child_value(), size});
  }
  for (const pugi::xml_node common : root.children("CommonPrefixes")) {
    const pugi::xml_node prefix = common.child("Prefix");
    if (!prefix) throw fail("CommonPrefixes without Prefix");
    page.prefixes.push_back(prefix.child_value());
  }
  if (std::string_view(root.child_value("IsTruncated")) == "true") {
    const pugi::xml_node token = root.child("NextContinuationToken");
    if (!token || *token.child_value() == '\0') {
      throw fail("IsTruncated without NextContinuationToken");
    }
    page.next_token = token.child_value();
  }
  return page;
}

}  // namespace tensorstream::s3
