#include "byte_size.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tensorstream/error.hpp"

namespace tensorstream {

std::uint64_t parse_byte_size(std::string_view text, std::string_view option) {
  const auto fail = [&] {
    return InvalidArgument(std::string(option) + ": invalid size '" + std::string(text) +
                           "' (examples: 4096, 512KiB, 16MiB, 2GiB)");
  };
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || number < 0 || !std::isfinite(number)) throw fail();
  std::string unit(end, text.data() + text.size());
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const bool binary = !unit.empty() && unit.back() == 'i';
  if (binary) unit.pop_back();
  if (unit.size() > 1) throw fail();
  constexpr std::string_view prefixes = "kmgt";
  std::uint64_t multiplier = 1;
  if (unit.size() == 1) {
    const auto power = prefixes.find(unit[0]);
    if (power == std::string_view::npos) throw fail();
    for (std::size_t i = 0; i <= power; ++i) multiplier *= binary ? 1024 : 1000;
  } else if (binary) {
    throw fail();
  }
  const double bytes = number * static_cast<double>(multiplier);
  if (bytes >= 18e18 || bytes != std::floor(bytes)) throw fail();
  return static_cast<std::uint64_t>(bytes);
}

std::string format_byte_size(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < units.size()) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  }
  return text;
}

std::string format_byte_rate(double bytes_per_second) {
  return format_byte_size(static_cast<std::uint64_t>(std::max(bytes_per_second, 0.0))) + "/s";
}

std::string format_byte_rate(std::uint64_t bytes, double seconds) {
  return format_byte_rate(seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0);
}

}  // namespace tensorstream
