#include "tensorstream/streaming/inspect.hpp"

#include <boost/asio/this_coro.hpp>

#include "streaming/discovery.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream {
namespace {

// Bounded as a stream's are: max_concurrency, when unset, comes from the environment.
StreamerOptions resolved(StreamerOptions options) {
  return environment_streamer_options(std::move(options));
}

std::vector<FileHeader> headers_of(std::vector<detail::SourceFile> files) {
  std::vector<FileHeader> headers;
  for (auto& file : files) {
    headers.push_back({std::move(file.url), file.size, std::move(file.header)});
  }
  return headers;
}

}  // namespace

std::vector<FileHeader> inspect(const std::string& remote_path, StreamerOptions options) {
  options = resolved(std::move(options));
  return headers_of(detail::discover_blocking(resolve_url(remote_path), options).files);
}

boost::asio::awaitable<std::vector<FileHeader>> async_inspect(std::string remote_path,
                                                              StreamerOptions options) {
  options = resolved(std::move(options));
  const Url url = resolve_url(remote_path);
  const auto store = open_store(url, co_await boost::asio::this_coro::executor, options.store);
  auto files = co_await detail::discover(*store, url, options);
  co_return headers_of(std::move(files));
}

}  // namespace tensorstream
