#include "tensorstream/streaming/inspect.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "streaming/discovery.hpp"
#include "tensorstream/model/model_loader_config.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream {

std::vector<FileHeader> inspect(const std::string& remote_path, StreamerOptions options) {
  namespace asio = boost::asio;
  // Bounded as a stream's are: max_concurrency, when unset, comes from the environment.
  options = ModelLoaderConfig::from_environment().streamer_options(std::move(options));
  const Url url = detail::resolve_url(remote_path);
  asio::io_context io;
  auto store = open_store(url, io.get_executor(), options.store);
  std::vector<detail::SourceFile> files;
  std::exception_ptr error;
  // The store may keep work of its own pending (a completion watcher), so the run ends when the
  // headers are in rather than when the context runs out of work.
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        files = co_await detail::discover(*store, url, options);
      },
      [&](std::exception_ptr failure) {
        error = failure;
        io.stop();
      });
  io.run();
  if (error) std::rethrow_exception(error);
  std::vector<FileHeader> headers;
  for (auto& file : files) {
    headers.push_back({std::move(file.url), file.size, std::move(file.header)});
  }
  return headers;
}

}  // namespace tensorstream
