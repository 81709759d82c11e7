#include "environment_setting.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

StreamerOptions environment_streamer_options(StreamerOptions explicit_options) {
  if (!explicit_options.chunk_size) {
    const auto setting = detail::environment_setting("CHUNK_SIZE");
    explicit_options.chunk_size = setting ? detail::positive_u64(*setting) : default_chunk_size;
  }
  if (!explicit_options.max_concurrency) {
    const auto setting = detail::environment_setting("MAX_CONCURRENCY");
    explicit_options.max_concurrency =
        setting ? detail::positive_size(*setting) : default_max_concurrency;
  }
  return explicit_options;
}

}  // namespace tensorstream
