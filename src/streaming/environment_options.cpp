#include "base/environment_setting.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

StreamerOptions environment_streamer_options(StreamerOptions explicit_options) {
  // Both variables are parsed before either is applied, so that a malformed one fails a
  // deployment at once even where an explicit option makes it unused.
  const auto chunk_setting = detail::environment_setting("CHUNK_SIZE");
  const auto concurrency_setting = detail::environment_setting("MAX_CONCURRENCY");
  const std::uint64_t chunk_size =
      chunk_setting ? detail::positive_byte_size(*chunk_setting) : default_chunk_size;
  const std::size_t max_concurrency =
      concurrency_setting ? detail::positive_size(*concurrency_setting) : default_max_concurrency;
  if (!explicit_options.chunk_size) explicit_options.chunk_size = chunk_size;
  if (!explicit_options.max_concurrency) explicit_options.max_concurrency = max_concurrency;
  return explicit_options;
}

}  // namespace tensorstream
