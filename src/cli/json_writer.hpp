#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "base/json_string.hpp"

namespace tensorstream::cli {

/// Appends `"key":` to a JSON object being built in `out`, with the comma before it when needed.
inline void append_key(std::string& out, std::string_view key) {
  if (out.back() != '{' && out.back() != '[') out += ',';
  append_json_string(out, key);
  out += ':';
}

/// Appends a JSON array of integers.
inline void append_int_array(std::string& out, std::span<const std::int64_t> values) {
  out += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(values[i]);
  }
  out += ']';
}

/// Appends `"key":value` with six decimals, as summaries give seconds and GB/s.
inline void append_decimal(std::string& out, std::string_view key, double value) {
  append_key(out, key);
  char number[48];
  std::snprintf(number, sizeof number, "%.6f", value);
  out += number;
}

/// `{"summary":{"source":…,"destination":…`: how the summary line of a command that writes
/// `source` to `destination` (cp, shard, partition) starts. The caller appends the rest and
/// closes it with "}}".
inline std::string transfer_summary_start(std::string_view source, std::string_view destination) {
  std::string line = "{";
  append_key(line, "summary");
  line += '{';
  append_key(line, "source");
  append_json_string(line, source);
  append_key(line, "destination");
  append_json_string(line, destination);
  return line;
}

}  // namespace tensorstream::cli
