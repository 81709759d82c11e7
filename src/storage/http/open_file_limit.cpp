#include "storage/http/open_file_limit.hpp"

#include <string>

#include "tensorstream/log.hpp"

namespace tensorstream {

rlim_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur >= limit.rlim_max) return limit.rlim_cur;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return before;
  if (log_level() <= LogLevel::debug) {
    log(LogLevel::debug, "raised the open file limit from " + std::to_string(before) + " to " +
                             std::to_string(limit.rlim_cur));
  }
  return limit.rlim_cur;
}

}  // namespace tensorstream
