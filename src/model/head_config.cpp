#include "tensorstream/model/head_config.hpp"

#include <simdjson.h>

#include <optional>
#include <string>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

class ConfigFields {
 public:
  ConfigFields(simdjson::dom::element document, std::string_view where)
      : document_(document), where_(where) {}

  // A positive integer field, or nullopt when the field is absent or null (transformers writes
  // `"head_dim": null` for models that derive it).
  std::optional<std::int64_t> optional_positive(std::string_view field) const {
    const auto value = document_[field];
    if (value.error() == simdjson::NO_SUCH_FIELD || value.is_null()) return std::nullopt;
    std::int64_t number = 0;
    if (value.get_int64().get(number) != simdjson::SUCCESS) {
      throw error("\"" + std::string(field) + "\" is not an integer");
    }
    if (number <= 0) {
      throw error("\"" + std::string(field) + "\" must be positive, got " + std::to_string(number));
    }
    return number;
  }

  std::int64_t positive(std::string_view field) const {
    const auto number = optional_positive(field);
    if (!number) throw error("\"" + std::string(field) + "\" is missing");
    return *number;
  }

  InvalidArgument error(const std::string& detail) const {
    return InvalidArgument(std::string(where_) + ": " + detail);
  }

 private:
  simdjson::dom::element document_;
  std::string_view where_;
};

}  // namespace

HeadConfig parse_head_config(std::string_view config_json, std::string_view where) {
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  if (const auto failure = parser.parse(simdjson::padded_string(config_json)).get(document)) {
    throw InvalidArgument(std::string(where) +
                          ": invalid JSON: " + simdjson::error_message(failure));
  }
  if (!document.is_object()) throw InvalidArgument(std::string(where) + ": not a JSON object");
  const ConfigFields fields(document, where);

  HeadConfig config;
  config.num_attention_heads = fields.positive("num_attention_heads");
  config.num_key_value_heads =
      fields.optional_positive("num_key_value_heads").value_or(config.num_attention_heads);
  if (const auto head_dim = fields.optional_positive("head_dim")) {
    config.head_dim = *head_dim;
  } else {
    const auto hidden_size = fields.positive("hidden_size");
    if (hidden_size % config.num_attention_heads != 0) {
      throw fields.error("hidden_size " + std::to_string(hidden_size) +
                         " is not a multiple of num_attention_heads " +
                         std::to_string(config.num_attention_heads));
    }
    config.head_dim = hidden_size / config.num_attention_heads;
  }
  return config;
}

}  // namespace tensorstream
