#pragma once
// A file's modification time as messages about files name it.

#include <cstdint>
#include <string>

namespace tensorstream {

/// "2026-12-01 05:40:01.123456789 UTC": `seconds` since the Unix epoch and the `nanoseconds`
/// (0 to 999999999) after them, as struct stat's st_mtim holds a time.
std::string format_file_time(std::int64_t seconds, std::int64_t nanoseconds);

}  // namespace tensorstream
