#pragma once
// ListBuckets: the request of one page and the parsing of its XML response.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::s3 {

/// One page of a ListBuckets listing.
struct BucketsPage {
  std::vector<std::string> names;          ///< In the order the service gave them.
  std::optional<std::string> next_token;   ///< ContinuationToken of the next page, if any.
};

/// The request target of a ListBuckets page: "/", continuing after `token` when given.
std::string list_buckets_target(const std::optional<std::string>& token);

/// Parses a ListBuckets response body. Throws FormatError naming `url` for a body that is not a
/// ListAllMyBucketsResult or a bucket without a Name.
BucketsPage parse_list_buckets(std::string_view body, const std::string& url);

}  // namespace tensorstream::s3
