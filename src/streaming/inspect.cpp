#include "tensorstream/streaming/inspect.hpp"

#include "streaming/discovery.hpp"
#include "tensorstream/model/model_loader_config.hpp"

namespace tensorstream {

std::vector<FileHeader> inspect(const std::string& remote_path, StreamerOptions options) {
  // Bounded as a stream's are: max_concurrency, when unset, comes from the environment.
  options = ModelLoaderConfig::from_environment().streamer_options(std::move(options));
  auto files = detail::discover_blocking(detail::resolve_url(remote_path), options).files;
  std::vector<FileHeader> headers;
  for (auto& file : files) {
    headers.push_back({std::move(file.url), file.size, std::move(file.header)});
  }
  return headers;
}

}  // namespace tensorstream
