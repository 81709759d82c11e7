#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "json_string.hpp"

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

}  // namespace tensorstream::cli
