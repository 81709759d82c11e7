#include "storage/bucket_listing.hpp"

#include <algorithm>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream {

boost::asio::awaitable<std::vector<ObjectInfo>> list_bucket(const std::string& url,
                                                            std::string_view service,
                                                            const std::string& prefix,
                                                            PageFetcher fetch_page) {
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    throw InvalidArgument(url + ": " + std::string(service) +
                          " listing needs a prefix starting and ending with '/'");
  }
  const std::string name_prefix = prefix.substr(1);
  std::vector<ObjectInfo> objects;
  std::optional<std::string> token;
  do {
    ListingPage page = co_await fetch_page(name_prefix, token);
    for (auto& object : page.objects) {
      objects.push_back(ObjectInfo{"/" + std::move(object.key), object.size});
    }
    token = std::move(page.next_token);
  } while (token);
  std::sort(objects.begin(), objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  co_return objects;
}

}  // namespace tensorstream
