#include "base/byte_size.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

#include "tensorstream/error.hpp"

namespace tensorstream {

namespace {

// A size split into its number and its unit, lower-cased: "16MiB" is 16 and "mib".
struct SizeText {
  double number = 0;
  std::string unit;
};

std::optional<SizeText> split_size(std::string_view text) {
  SizeText split;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), split.number);
  if (ec != std::errc{} || split.number < 0 || !std::isfinite(split.number)) return std::nullopt;
  split.unit.assign(end, text.data() + text.size());
  for (auto& c : split.unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return split;
}

// "8MiB (8388608 bytes)": the size spelled with `unit`, and its bytes where they are whole.
std::string spelled(std::string_view text, std::string_view unit) {
  const std::string written = std::string(text.substr(0, text.size() - 1)) + std::string(unit);
  const std::uint64_t bytes = parse_byte_size(written, "");
  return written + " (" + std::to_string(bytes) + " byte" + (bytes == 1 ? "" : "s") + ")";
}

}  // namespace

std::optional<std::string> ambiguous_byte_size(std::string_view text) {
  const auto split = split_size(text);
  constexpr std::string_view prefixes = "kmgt";
  if (!split || split->unit.size() != 1 ||
      prefixes.find(split->unit[0]) == std::string_view::npos) {
    return std::nullopt;
  }
  const char prefix = static_cast<char>(std::toupper(static_cast<unsigned char>(split->unit[0])));
  try {
    return "write " + spelled(text, std::string(1, prefix) + "iB") + " or " +
           spelled(text, std::string(1, prefix) + "B");
  } catch (const InvalidArgument&) {
    // A fraction of a byte in either unit ("1.1K"): the units alone, without the bytes.
    const std::string number(text.substr(0, text.size() - 1));
    return "write " + number + prefix + "iB or " + number + prefix + "B";
  }
}

std::uint64_t parse_byte_size(std::string_view text, std::string_view option) {
  if (const auto advice = ambiguous_byte_size(text)) {
    throw InvalidArgument(std::string(option) + ": " + std::string(text) + " is ambiguous: " +
                          *advice);
  }
  const auto fail = [&] {
    return InvalidArgument(std::string(option) + ": invalid size '" + std::string(text) +
                           "' (examples: 4096, 512KiB, 16MiB, 2GiB)");
  };
  auto split = split_size(text);
  if (!split) throw fail();
  std::string& unit = split->unit;
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
  const double bytes = split->number * static_cast<double>(multiplier);
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
