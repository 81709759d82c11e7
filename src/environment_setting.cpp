#include "environment_setting.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "byte_size.hpp"
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

bool is_true(std::string_view text) {
  constexpr std::string_view word = "true";
  if (text.size() != word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != word[i]) return false;
  }
  return true;
}

}  // namespace tensorstream::detail
