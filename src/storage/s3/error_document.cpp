#include "storage/s3/error_document.hpp"

#include <pugixml.hpp>

namespace tensorstream::s3 {

std::optional<ErrorDocument> parse_error_document(std::string_view body) {
  pugi::xml_document document;
  if (!document.load_buffer(body.data(), body.size())) return std::nullopt;
  const pugi::xml_node error = document.child("Error");
  ErrorDocument parsed{error.child_value("Code"), error.child_value("Message"),
                       error.child_value("RequestId")};
  if (parsed.code.empty()) return std::nullopt;
  return parsed;
}

}  // namespace tensorstream::s3
