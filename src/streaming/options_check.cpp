#include "streaming/options_check.hpp"

#include <string>

#include "distributed/rendezvous_address.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::detail {

void check_streamer_options(const StreamerOptions& options) {
  if (options.chunk_size == 0u) throw InvalidArgument("chunk_size must be at least 1 byte");
  if (options.max_concurrency == 0u) throw InvalidArgument("max_concurrency must be at least 1");
  if (options.max_concurrency > max_concurrency_limit) {
    throw InvalidArgument("max_concurrency " + std::to_string(*options.max_concurrency) +
                          " is above the limit of " + std::to_string(max_concurrency_limit));
  }
  if (options.io_threads == 0) throw InvalidArgument("io_threads must be at least 1");
  if (options.io_threads > max_io_threads_limit) {
    throw InvalidArgument("io_threads " + std::to_string(options.io_threads) +
                          " is above the limit of " + std::to_string(max_io_threads_limit));
  }
  if (options.memory_limit == 0) throw InvalidArgument("memory_limit must be at least 1 byte");
  // First: in a world of processes, the rank the caller gave is the world's.
  check_distributed_options(options.distributed);
  const int tensor_parallel_size = options.tensor_parallel_size.value_or(1);
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size must be at least 1, not " +
                          std::to_string(tensor_parallel_size));
  }
  if (options.rank < 0 || options.rank >= tensor_parallel_size) {
    throw InvalidArgument("rank " + std::to_string(options.rank) + " is outside [0, " +
                          std::to_string(tensor_parallel_size) + ")");
  }
}

}  // namespace tensorstream::detail
