#include "storage/bucket_listing.hpp"

#include <algorithm>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream {

boost::asio::awaitable<Listing> list_bucket_level(const std::string& url, std::string_view service,
                                                  const std::string& prefix,
                                                  PageFetcher fetch_page) {
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    throw InvalidArgument(url + ": " + std::string(service) +
                          " listing needs a prefix starting and ending with '/'");
  }
  const std::string name_prefix = prefix.substr(1);
  Listing listing;
  std::optional<std::string> token;
  do {
    ListingPage page = co_await fetch_page(name_prefix, token);
    for (auto& object : page.objects) {
      listing.objects.push_back(ObjectInfo{"/" + std::move(object.key), object.size});
    }
    for (auto& name : page.prefixes) listing.prefixes.push_back("/" + std::move(name));
    token = std::move(page.next_token);
  } while (token);
  std::sort(listing.objects.begin(), listing.objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  std::sort(listing.prefixes.begin(), listing.prefixes.end());
  co_return listing;
}

boost::asio::awaitable<std::vector<ObjectInfo>> list_bucket(const std::string& url,
                                                            std::string_view service,
                                                            const std::string& prefix,
                                                            PageFetcher fetch_page) {
  Listing listing = co_await list_bucket_level(url, service, prefix, std::move(fetch_page));
  co_return std::move(listing.objects);
}

}  // namespace tensorstream
