#include "storage/http/content_range.hpp"

#include <charconv>

namespace tensorstream {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool is_bytes_unit(std::string_view unit) {
  constexpr std::string_view bytes = "bytes";
  if (unit.size() != bytes.size()) return false;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    if ((unit[i] | 0x20) != bytes[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<ContentRange> ContentRange::parse(std::string_view text) {
  text = trim(text);
  const auto space = text.find(' ');
  if (space == std::string_view::npos || !is_bytes_unit(text.substr(0, space))) return std::nullopt;
  const std::string_view spec = trim(text.substr(space + 1));
  const auto slash = spec.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view range = spec.substr(0, slash);
  const std::string_view total = spec.substr(slash + 1);

  ContentRange result;
  if (total != "*") {
    result.total = number(total);
    if (!result.total) return std::nullopt;
  }
  if (range == "*") return result.total ? std::optional(result) : std::nullopt;
  const auto dash = range.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  result.first = number(range.substr(0, dash));
  result.last = number(range.substr(dash + 1));
  if (!result.first || !result.last || *result.last < *result.first) return std::nullopt;
  if (result.total && *result.last >= *result.total) return std::nullopt;
  return result;
}

}  // namespace tensorstream
