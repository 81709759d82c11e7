#pragma once
// Percent-decoding of URL parts: signers and parsers compare names as decoded.

#include <string>
#include <string_view>

namespace tensorstream {

/// `text` with every %XY (hex digits, either case) replaced by its byte; a '%' not followed by
/// two hex digits is kept as is.
std::string percent_decode(std::string_view text);

}  // namespace tensorstream
