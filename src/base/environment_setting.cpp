#include "base/environment_setting.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/byte_size.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

template <class Number>
Number positive_number(const EnvironmentSetting& setting) {
  const std::string_view text = setting.value;
  Number number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc::result_out_of_range) {
    throw InvalidArgument(setting.variable + "='" + setting.value + "' is too large (at most " +
                          std::to_string(std::numeric_limits<Number>::max()) + ")");
  }
  if (ec != std::errc{} || end != text.data() + text.size() || number == 0) {
    throw InvalidArgument(setting.variable + "='" + setting.value +
                          "' is not a positive decimal integer");
  }
  return number;
}

}  // namespace

std::optional<EnvironmentSetting> environment_setting(std::string_view name) {
  for (const std::string_view prefix : {"TENSORSTREAM_", "FLYTE_MODEL_LOADER_"}) {
    std::string variable(prefix);
    variable += name;
    const char* value = std::getenv(variable.c_str());
    if (value != nullptr && *value != '\0') return EnvironmentSetting{std::move(variable), value};
  }
  return std::nullopt;
}

std::size_t positive_size(const EnvironmentSetting& setting) {
  return positive_number<std::size_t>(setting);
}

std::uint64_t positive_byte_size(const EnvironmentSetting& setting) {
  if (const auto advice = ambiguous_byte_size(setting.value)) {
    throw InvalidArgument(setting.variable + "='" + setting.value + "' is ambiguous: " + *advice);
  }
  std::uint64_t size = 0;
  try {
    size = parse_byte_size(setting.value, setting.variable);
  } catch (const InvalidArgument&) {
  }
  if (size == 0) {
    throw InvalidArgument(setting.variable + "='" + setting.value +
                          "' is not a positive size (e.g. 4096, 512KiB, 16MiB)");
  }
  return size;
}

std::chrono::milliseconds positive_seconds(const EnvironmentSetting& setting) {
  double seconds = 0;
  const std::string_view text = setting.value;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // A day at most: beyond it a limit is no limit, and the count of milliseconds stays exact.
  if (ec != std::errc{} || end != text.data() + text.size() || !(seconds > 0) ||
      seconds > 86'400) {
    throw InvalidArgument(setting.variable + "='" + setting.value +
                          "' is not a number of seconds above 0 and at most 86400 (e.g. 10, 2.5)");
  }
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::milliseconds(std::llround(seconds * 1000)));
}

bool is_true(std::string_view text) {
  constexpr std::string_view word = "true";
  if (text.size() != word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != word[i]) return false;
  }
  return true;
}

}  // namespace tensorstream::detail
