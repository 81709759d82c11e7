#include "storage/s3/list_buckets.hpp"

#include <pugixml.hpp>

#include "storage/s3/sigv4.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {

std::string list_buckets_target(const std::optional<std::string>& token) {
  return token ? "/?continuation-token=" + uri_encode(*token, false) : "/";
}

BucketsPage parse_list_buckets(std::string_view body, const std::string& url) {
  const auto fail = [&](const std::string& why) {
    return FormatError(url + ": malformed ListBuckets response: " + why);
  };
  pugi::xml_document document;
  if (const auto result = document.load_buffer(body.data(), body.size()); !result) {
    throw fail(result.description());
  }
  const pugi::xml_node root = document.child("ListAllMyBucketsResult");
  if (!root) throw fail("no ListAllMyBucketsResult element");
  BucketsPage page;
  for (const pugi::xml_node bucket : root.child("Buckets").children("Bucket")) {
    const pugi::xml_node name = bucket.child("Name");
    if (!name || *name.child_value() == '\0') throw fail("a bucket without Name");
    page.names.push_back(name.child_value());
  }
  if (const char* token = root.child_value("ContinuationToken"); *token != '\0') {
    page.next_token = token;
  }
  return page;
}

}  // namespace tensorstream::s3
