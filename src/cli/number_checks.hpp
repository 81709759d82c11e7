#pragma once
// Checks of numeric flags whose failures read well: CLI11's own PositiveNumber reports a range
// up to the largest double, 309 digits long.

#include <CLI/Error.hpp>
#include <CLI/Validators.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "streaming/options_check.hpp"
#include "tensorstream/error.hpp"

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

/// Accepts whole numbers from 1 to `most` (a stream's limits: max_concurrency_limit,
/// max_io_threads_limit): "--io-threads: 100000 is not between 1 and 1024".
inline CLI::Validator whole_number_up_to(std::size_t most) {
  const std::string between = "between 1 and " + std::to_string(most);
  return CLI::Validator(
      [most, between](std::string& text) {
        return detail::check_number(
            text,
            [most](double value) {
              return value >= 1 && value <= static_cast<double>(most) &&
                     value == std::floor(value);
            },
            between.c_str());
      },
      "1-" + std::to_string(most));
}

/// Accepts zero and numbers above it: "--retries: -1 is not zero or more".
inline const CLI::Validator non_negative_number(
    [](std::string& text) {
      return detail::check_number(text, [](double value) { return value >= 0; }, "zero or more");
    },
    "NONNEGATIVE");

/// The smallest --chunk-size the tool takes: every chunk is a request of its own, so 1 byte
/// would read a 4 MiB file with four million of them.
inline constexpr std::uint64_t min_chunk_size = 64 * 1024;

/// A --chunk-size value: a size (parse_byte_size()) of at least min_chunk_size.
/// @throws InvalidArgument, a usage error, saying why.
inline std::uint64_t parse_chunk_size(const std::string& text) {
  const std::uint64_t size = parse_byte_size(text, "--chunk-size");
  if (size < min_chunk_size) {
    throw InvalidArgument("--chunk-size: " + text + " is below the minimum of 64KiB (each chunk "
                          "is a request of its own)");
  }
  return size;
}

/// Holds a chunk size from the environment (TENSORSTREAM_CHUNK_SIZE, else
/// FLYTE_MODEL_LOADER_CHUNK_SIZE) to --chunk-size's minimum, since the variable stands in for the
/// flag; the library takes any positive size, as the Python original did.
/// @throws InvalidArgument, a usage error naming the variable.
inline void check_environment_chunk_size() {
  const auto setting = tensorstream::detail::environment_setting("CHUNK_SIZE");
  if (!setting) return;
  if (tensorstream::detail::positive_byte_size(*setting) < min_chunk_size) {
    throw InvalidArgument(setting->variable + "='" + setting->value +
                          "' is below the minimum of 64KiB (each chunk is a request of its own)");
  }
}

/// A `--timeout SECONDS` value as milliseconds, checked to lie in (0, most], or [0, most] where
/// `zero_allowed`.
/// @throws InvalidArgument, a usage error: "--timeout: 9000 is not between 0 and 3600 seconds"
///   (or "is not above 0 and at most 3600 seconds" where zero is not allowed).
inline std::chrono::milliseconds timeout_flag(double seconds, int most, bool zero_allowed = false) {
  const bool low_ok = zero_allowed ? seconds >= 0 : seconds > 0;
  if (!(low_ok && seconds <= most)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", seconds);
    throw InvalidArgument("--timeout: " + std::string(given) +
                          (zero_allowed ? " is not between 0 and " : " is not above 0 and at most ") +
                          std::to_string(most) + " seconds");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000)));
}

/// The value of the size flag `flag` (--memory-limit, --max-part-size, ...): a size above zero.
/// @throws InvalidArgument, a usage error naming the flag: "--memory-limit: 0 is not a positive
///   size".
inline std::uint64_t parse_positive_size(const std::string& text, const std::string& flag) {
  const std::uint64_t size = parse_byte_size(text, flag);
  if (size == 0) throw InvalidArgument(flag + ": " + text + " is not a positive size");
  return size;
}

/// Checks --rank against --tp as a user wrote them, naming the flags (the library's own check
/// names StreamerOptions' fields).
/// @throws InvalidArgument, a usage error: "--rank needs --tp", or "--rank 7 is outside --tp 4
///   (ranks 0 to 3)".
inline void check_rank_flags(int rank, const std::optional<int>& tensor_parallel_size) {
  if (!tensor_parallel_size) {
    if (rank != 0) {
      throw InvalidArgument("--rank needs --tp (the tensor-parallel size the rank is one of)");
    }
    return;
  }
  if (rank < 0 || rank >= *tensor_parallel_size) {
    throw InvalidArgument("--rank " + std::to_string(rank) + " is outside --tp " +
                          std::to_string(*tensor_parallel_size) + " (ranks 0 to " +
                          std::to_string(*tensor_parallel_size - 1) + ")");
  }
}

}  // namespace tensorstream::cli
