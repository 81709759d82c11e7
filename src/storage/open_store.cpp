#include "tensorstream/storage/open_store.hpp"

#include "tensorstream/error.hpp"
#include "tensorstream/storage/cached_store.hpp"
#include "tensorstream/storage/scheme.hpp"

namespace tensorstream {

std::unique_ptr<ObjectStore> open_store(const Url& url, boost::asio::any_io_executor executor,
                                        const StoreOptions& options) {
  const auto scheme = find_scheme_serving(url, options);
  if (!scheme) {
    throw InvalidArgument(url.str() + ": " + url.scheme + ":// is not a registered scheme");
  }
  auto store = scheme->open(url, executor, options);
  if (auto cache = resolve_cache(options)) {
    return std::make_unique<CachedStore>(std::move(store), std::move(*cache), std::move(executor));
  }
  return store;
}

}  // namespace tensorstream
