#pragma once
// JSON string literals for the files tensorstream writes (safetensors headers, model metadata).

#include <string>
#include <string_view>

namespace tensorstream {

/// Appends `text` to `out` as a quoted JSON string, escaping quotes, backslashes and control
/// characters. `text` must be valid UTF-8; other bytes pass through unchanged.
void append_json_string(std::string& out, std::string_view text);

/// `text` as a quoted JSON string; also how error messages quote names, so that a name holding
/// quotes or control characters reads unambiguously.
std::string json_string(std::string_view text);

}  // namespace tensorstream
