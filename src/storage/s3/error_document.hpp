#pragma once
// The XML body S3 sends with an error status.

#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::s3 {

/// The fields of an S3 `<Error>` document that make a useful message.
struct ErrorDocument {
  std::string code;        ///< e.g. "NoSuchKey", "SignatureDoesNotMatch".
  std::string message;     ///< The service's explanation.
  std::string request_id;  ///< For AWS support; may be empty.
};

/// Parses `body`; nullopt when it is not an `<Error>` document with a Code.
std::optional<ErrorDocument> parse_error_document(std::string_view body);

}  // namespace tensorstream::s3
