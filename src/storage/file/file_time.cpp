#include "storage/file/file_time.hpp"

#include <cstdio>
#include <ctime>

namespace tensorstream {

std::string format_file_time(std::int64_t seconds, std::int64_t nanoseconds) {
  const auto time = static_cast<std::time_t>(seconds);
  std::tm parts{};
  ::gmtime_r(&time, &parts);
  char text[64];
  const auto length = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  std::snprintf(text + length, sizeof text - length, ".%09lld UTC",
                static_cast<long long>(nanoseconds));
  return text;
}

}  // namespace tensorstream
