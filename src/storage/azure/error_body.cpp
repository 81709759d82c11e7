#include "storage/azure/error_body.hpp"

#include <array>
#include <pugixml.hpp>

namespace tensorstream::azure {

std::optional<ErrorBody> parse_error_body(std::string_view body) {
  pugi::xml_document document;
  if (!document.load_buffer(body.data(), body.size())) return std::nullopt;
  const pugi::xml_node error = document.child("Error");
  ErrorBody parsed{error.child_value("Code"), error.child_value("Message")};
  if (parsed.code.empty()) return std::nullopt;
  if (const auto end = parsed.message.find_first_of("\r\n"); end != std::string::npos) {
    parsed.message.resize(end);
  }
  return parsed;
}

bool is_retryable_code(std::string_view code) {
  static constexpr std::array<std::string_view, 3> retryable{"ServerBusy", "OperationTimedOut",
                                                             "InternalError"};
  for (const auto candidate : retryable) {
    if (code == candidate) return true;
  }
  return false;
}

bool is_not_found_code(std::string_view code) {
  return code == "BlobNotFound" || code == "ContainerNotFound" || code == "ResourceNotFound";
}

}  // namespace tensorstream::azure
