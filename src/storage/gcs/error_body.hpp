#pragma once
// The JSON body the Cloud Storage JSON API sends with an error status.

#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::gcs {

/// Parses {"error": {"code": 404, "message": "No such object: b/o", ...}} and returns the
/// message; nullopt when `body` is not such a document or its message is empty.
std::optional<std::string> error_message(std::string_view body);

}  // namespace tensorstream::gcs
