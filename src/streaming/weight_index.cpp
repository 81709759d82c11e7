#include "streaming/weight_index.hpp"

#include <simdjson.h>

#include <algorithm>
#include <unordered_map>

#include "base/json_string.hpp"
#include "storage/relative_key.hpp"

namespace tensorstream::detail {
namespace {

namespace dom = simdjson::dom;

std::string_view type_name(dom::element_type type) {
  switch (type) {
    case dom::element_type::ARRAY: return "an array";
    case dom::element_type::OBJECT: return "an object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE: return "a number";
    case dom::element_type::STRING: return "a string";
    case dom::element_type::BOOL: return "a boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "an unknown value";
}

}  // namespace

WeightIndex parse_weight_index(std::string_view json, std::string_view object) {
  const std::string where(object);
  const simdjson::padded_string padded(json);
  dom::parser parser;
  dom::element document;
  if (const auto ec = parser.parse(padded).get(document)) {
    std::string_view cause = simdjson::error_message(ec);
    if (cause.ends_with('.')) cause.remove_suffix(1);
    throw UnusableIndex(where + ": not valid JSON (" + std::string(cause) + ")");
  }
  dom::element weight_map;
  if (!document.is_object() || document.at_key("weight_map").get(weight_map) != simdjson::SUCCESS) {
    throw UnusableIndex(where + ": no \"weight_map\"");
  }
  dom::object entries;
  if (weight_map.get_object().get(entries) != simdjson::SUCCESS) {
    throw FormatError(where + ": \"weight_map\" is " + std::string(type_name(weight_map.type())) +
                      ", not an object of tensor names to file names");
  }
  if (entries.size() == 0) throw FormatError(where + ": \"weight_map\" is empty");

  std::unordered_map<std::string, std::string> file_of;
  WeightIndex index;
  for (const auto [key, value] : entries) {
    const std::string tensor(key);
    std::string_view file;
    if (value.get_string().get(file) != simdjson::SUCCESS) {
      throw FormatError(where + ": \"weight_map\" gives tensor " + json_string(tensor) + " " +
                        std::string(type_name(value.type())) + ", not a file name");
    }
    // Entries become keys under the index's directory and must stay there.
    if (!is_relative_key_inside(file)) {
      throw FormatError(where + ": \"weight_map\" gives tensor " + json_string(tensor) +
                        " the file " + json_string(file) +
                        ", which is not a relative path inside the index's directory");
    }
    const auto [known, inserted] = file_of.emplace(tensor, file);
    if (!inserted) {
      if (known->second == file) continue;
      throw FormatError(where + ": \"weight_map\" gives tensor " + json_string(tensor) +
                        " two files, " + json_string(known->second) + " and " + json_string(file));
    }
    index[std::string(file)].push_back(tensor);
  }
  for (auto& [file, tensors] : index) std::sort(tensors.begin(), tensors.end());
  return index;
}

}  // namespace tensorstream::detail
