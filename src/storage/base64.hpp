#pragma once
// Standard base64 (RFC 4648, section 4, with padding): how Azure writes account keys, block ids
// and the Shared Key signature, and how Basic proxy credentials are sent.

#include <optional>
#include <string>
#include <string_view>

namespace tensorstream {

/// `bytes` in base64 with padding.
std::string base64_encode(std::string_view bytes);

/// The bytes `text` encodes; nullopt when it is not padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace tensorstream
