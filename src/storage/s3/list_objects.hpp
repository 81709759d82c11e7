#pragma once
// ListObjectsV2: the request of one page and the parsing of its XML response.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/bucket_listing.hpp"

namespace tensorstream::s3 {

/// The query of a ListObjectsV2 request for keys starting with `prefix` (an S3 key prefix, no
/// leading '/'), grouped at '/' when `delimited`, continuing after `token` when given.
std::string list_objects_query(const std::string& prefix, bool delimited,
                               const std::optional<std::string>& token);

/// Parses a ListObjectsV2 response body. Throws FormatError naming `url` for a body that is not
/// a ListBucketResult, an entry without Key or with a bad Size, or a truncated page without a
/// continuation token.
ListingPage parse_list_objects(std::string_view body, const std::string& url);

}  // namespace tensorstream::s3
