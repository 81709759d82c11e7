#include "storage/cache/cache_floor.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/cache_options.hpp"

namespace tensorstream {

std::uint64_t CacheFloor::bytes_on(std::uint64_t filesystem_bytes) const {
  std::optional<std::uint64_t> floor = bytes;
  if (percent) {
    const std::uint64_t share = filesystem_bytes / 100 * *percent +
                                filesystem_bytes % 100 * *percent / 100;
    floor = std::min(floor.value_or(share), share);
  }
  return floor.value_or(0);
}

CacheFloor CacheFloor::standard() { return CacheFloor{std::uint64_t{5} << 30, 10}; }

CacheFloor parse_cache_floor(std::string_view text, std::string_view option) {
  if (!text.ends_with('%')) return CacheFloor{parse_byte_size(text, option), std::nullopt};
  unsigned percent = 0;
  const std::string_view number = text.substr(0, text.size() - 1);
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), percent);
  if (error != std::errc() || end != number.data() + number.size() || number.empty() ||
      percent > 100) {
    throw InvalidArgument(std::string(option) + " " + std::string(text) +
                          ": not a size (5GiB) or a share of the file system (10%)");
  }
  return CacheFloor{std::nullopt, percent};
}

namespace detail {

std::optional<CacheFloor> environment_cache_floor() {
  const auto setting = environment_setting("CACHE_MIN_FREE");
  if (!setting) return std::nullopt;
  try {
    return parse_cache_floor(setting->value, setting->variable);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(setting->variable + "='" + setting->value +
                          "' is not a size (5GiB) or a share of the file system (10%)");
  }
}

}  // namespace detail
}  // namespace tensorstream
