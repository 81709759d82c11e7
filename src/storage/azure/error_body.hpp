#pragma once
// Blob Storage's error responses: an XML body <Error><Code/><Message/></Error>, or, for HEAD
// requests, which have no body, the x-ms-error-code header alone.

#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::azure {

/// What an error body says.
struct ErrorBody {
  std::string code;     ///< e.g. "BlobNotFound", "AuthenticationFailed".
  std::string message;  ///< Its first line, without Azure's "RequestId:..." and "Time:..." lines.
};

/// The code and message of an error body; nullopt when it is not one.
std::optional<ErrorBody> parse_error_body(std::string_view body);

/// Whether Azure documents the error `code` as one a retry may cure (ServerBusy,
/// OperationTimedOut, InternalError).
bool is_retryable_code(std::string_view code);

/// Whether the error `code` says the container or blob does not exist.
bool is_not_found_code(std::string_view code);

}  // namespace tensorstream::azure
