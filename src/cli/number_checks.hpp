#pragma once
// Checks of numeric flags whose failures read well: CLI11's own PositiveNumber reports a range
// up to the largest double, 309 digits long.

#include <CLI/Error.hpp>
#include <CLI/Validators.hpp>
#include <cstdlib>
#include <string>

namespace tensorstream::cli {
namespace detail {

// The failure of `text` as a number of the kind that `accept` admits, or "" when it passes.
template <class Accept>
std::string check_number(const std::string& text, Accept accept, const char* kind) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return "'" + text + "' is not a number";
  if (!accept(value)) return text + " is not " + kind;
  return {};
}

}  // namespace detail

/// Accepts numbers above zero: "--concurrency: 0 is not a positive number".
inline const CLI::Validator positive_number(
    [](std::string& text) {
      return detail::check_number(text, [](double value) { return value > 0; },
                                  "a positive number");
    },
    "POSITIVE");

/// Accepts zero and numbers above it: "--retries: -1 is not zero or more".
inline const CLI::Validator non_negative_number(
    [](std::string& text) {
      return detail::check_number(text, [](double value) { return value >= 0; }, "zero or more");
    },
    "NONNEGATIVE");

}  // namespace tensorstream::cli
