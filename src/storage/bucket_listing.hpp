#pragma once
// Listing a bucket page by page, as S3's ListObjectsV2 and GCS's objects.list both work.

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

/// One page of a bucket listing.
struct ListingPage {
  /// Objects of the page with their names as keys (no leading '/'), in the service's order.
  std::vector<ObjectInfo> objects;
  /// Names ending in the delimiter that group the others (S3's CommonPrefixes, GCS's
  /// prefixes), in a delimited listing.
  std::vector<std::string> prefixes;
  /// The token of the next page; nullopt on the last page.
  std::optional<std::string> next_token;
};

/// Fetches the page of a listing of the names starting with `name_prefix` that `token` continues
/// (nullopt: the first page).
using PageFetcher = std::function<boost::asio::awaitable<ListingPage>(
    const std::string& name_prefix, const std::optional<std::string>& token)>;

/// The objects and prefixes directly under the store key `prefix` (starting and ending with '/')
/// of a bucket, from the pages of a listing delimited by '/' that `fetch_page` returns, keyed
/// "/" + name and sorted. Throws as list_bucket() does.
boost::asio::awaitable<Listing> list_bucket_level(const std::string& url, std::string_view service,
                                                  const std::string& prefix,
                                                  PageFetcher fetch_page);

/// The objects under the store key `prefix` (starting and ending with '/') of a bucket, page
/// after page from `fetch_page`, keyed "/" + name and sorted by key. Throws InvalidArgument
/// naming `url`, the prefix's URL, for a prefix of another form (`service`, e.g. "S3", says
/// whose).
boost::asio::awaitable<std::vector<ObjectInfo>> list_bucket(const std::string& url,
                                                            std::string_view service,
                                                            const std::string& prefix,
                                                            PageFetcher fetch_page);

}  // namespace tensorstream
