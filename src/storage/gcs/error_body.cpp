#include "storage/gcs/error_body.hpp"

#include <simdjson.h>

namespace tensorstream::gcs {

std::optional<std::string> error_message(std::string_view body) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  std::string_view message;
  if (parser.parse(padded)["error"]["message"].get(message) || message.empty()) {
    return std::nullopt;
  }
  return std::string(message);
}

}  // namespace tensorstream::gcs
