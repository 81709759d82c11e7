#include "tensorstream/batching/batch_stats.hpp"

namespace tensorstream {

double BatchStats::utilization() const noexcept {
  const double total = busy_time_s + idle_time_s;
  return total > 0 ? busy_time_s / total : 0.0;
}

}  // namespace tensorstream
