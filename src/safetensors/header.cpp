#include "tensorstream/safetensors/header.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

namespace od = simdjson::ondemand;

// Unknown fields are skipped but still validated; this bounds the recursion that does it.
constexpr int max_skipped_depth = 64;

// A parser keeps its buffers between documents, so each thread reuses one for common headers. A
// header above this size gets a parser of its own, so that its buffers are not kept forever.
constexpr std::size_t reused_parser_limit = 1u << 20;

FormatError header_error(std::string_view object, const std::string& detail) {
  return FormatError("invalid safetensors header in " + std::string(object) + ": " + detail);
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string_view type_name(od::json_type type) {
  switch (type) {
    case od::json_type::array: return "an array";
    case od::json_type::object: return "an object";
    case od::json_type::number: return "a number";
    case od::json_type::string: return "a string";
    case od::json_type::boolean: return "a boolean";
    case od::json_type::null: return "null";
  }
  return "an unknown value";
}

// Elements of a tensor. Zero dimensions make it 0 regardless of the others; otherwise the product
// must fit int64, because torch addresses elements with int64 sizes and strides. nullopt if not.
std::optional<std::uint64_t> checked_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t product = 1;
  bool overflow = false;
  for (const auto dim : shape) {
    if (dim == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(product, dim, &product);
  }
  if (overflow) return std::nullopt;
  return static_cast<std::uint64_t>(product);
}

class JsonHeaderParser {
 public:
  JsonHeaderParser(std::string_view object, std::uint64_t object_size, std::size_t json_size)
      : object_(object) {
    header_.data_start = 8 + json_size;
    data_size_ = object_size - header_.data_start;
  }

  Header parse(std::string_view json) {
    const simdjson::padded_string padded(json);
    thread_local od::parser reused;
    od::parser own;
    od::parser& parser = json.size() <= reused_parser_limit ? reused : own;
    od::document doc;
    if (const auto ec = parser.iterate(padded).get(doc)) fail_json(ec);
    od::json_type type;
    if (const auto ec = doc.type().get(type)) fail_json(ec);
    if (type != od::json_type::object) {
      fail("the top level is " + std::string(type_name(type)) + ", not an object");
    }
    od::object top;
    if (const auto ec = doc.get_object().get(top)) fail_json(ec);
    bool seen_metadata = false;
    for (auto field_result : top) {
      od::field field;
      if (const auto ec = std::move(field_result).get(field)) fail_json(ec);
      std::string_view key;
      if (const auto ec = field.unescaped_key().get(key)) fail_json(ec);
      if (key == "__metadata__") {
        if (seen_metadata) fail("duplicate \"__metadata__\"");
        seen_metadata = true;
        parse_metadata(field.value());
      } else {
        header_.tensors.push_back(parse_tensor(std::string(key), field.value()));
      }
    }
    // A document that goes on after the closing brace is not one JSON value.
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
      fail("invalid JSON (content after the top-level object)");
    }
    check_format();
    check_unique_names();
    std::sort(header_.tensors.begin(), header_.tensors.end(), [](const auto& a, const auto& b) {
      return std::tie(a.begin, a.name) < std::tie(b.begin, b.name);
    });
    check_no_overlap();
    return std::move(header_);
  }

 private:
  [[noreturn]] void fail(const std::string& detail) const {
    throw header_error(object_, detail);
  }

  [[noreturn]] void fail_tensor(std::string_view name, const std::string& detail) const {
    fail("tensor " + json_string(name) + ": " + detail);
  }

  [[noreturn]] void fail_json(simdjson::error_code ec) const {
    std::string_view cause = simdjson::error_message(ec);
    if (cause.ends_with('.')) cause.remove_suffix(1);
    fail("invalid JSON (" + std::string(cause) + ")");
  }

  od::json_type type_of(od::value& value) const {
    od::json_type type;
    if (const auto ec = value.type().get(type)) fail_json(ec);
    return type;
  }

  std::string get_string(od::value& value) const {
    std::string_view text;
    if (const auto ec = value.get_string().get(text)) fail_json(ec);
    return std::string(text);
  }

  void parse_metadata(od::value value) {
    const auto type = type_of(value);
    if (type != od::json_type::object) {
      fail("\"__metadata__\" is " + std::string(type_name(type)) + ", not an object of strings");
    }
    od::object object;
    if (const auto ec = value.get_object().get(object)) fail_json(ec);
    for (auto field_result : object) {
      od::field field;
      if (const auto ec = std::move(field_result).get(field)) fail_json(ec);
      std::string_view key_view;
      if (const auto ec = field.unescaped_key().get(key_view)) fail_json(ec);
      std::string key(key_view);
      od::value entry = field.value();
      const auto entry_type = type_of(entry);
      if (entry_type != od::json_type::string) {
        fail("\"__metadata__\" entry " + json_string(key) + " is " +
             std::string(type_name(entry_type)) + ", not a string");
      }
      auto text = get_string(entry);
      if (!header_.metadata.emplace(key, std::move(text)).second) {
        fail("duplicate \"__metadata__\" entry " + json_string(key));
      }
    }
  }

  void check_format() const {
    const auto format = header_.metadata.find("format");
    if (format != header_.metadata.end() && format->second != "pt") {
      throw FormatError("unsupported format " + json_string(format->second) + " in " +
                        std::string(object_) + ": only \"pt\" is supported");
    }
  }

  TensorInfo parse_tensor(std::string name, od::value value) {
    TensorInfo info;
    info.name = std::move(name);
    const auto type = type_of(value);
    if (type != od::json_type::object) {
      fail_tensor(info.name, "entry is " + std::string(type_name(type)) + ", not an object");
    }
    od::object object;
    if (const auto ec = value.get_object().get(object)) fail_json(ec);
    bool has_dtype = false;
    bool has_shape = false;
    bool has_offsets = false;
    const auto first_time = [&](bool& seen, std::string_view key) {
      if (seen) fail_tensor(info.name, "duplicate field " + json_string(key));
      seen = true;
    };
    for (auto field_result : object) {
      od::field field;
      if (const auto ec = std::move(field_result).get(field)) fail_json(ec);
      std::string_view key;
      if (const auto ec = field.unescaped_key().get(key)) fail_json(ec);
      if (key == "dtype") {
        first_time(has_dtype, key);
        info.dtype = parse_tensor_dtype(info.name, field.value());
      } else if (key == "shape") {
        first_time(has_shape, key);
        info.shape = parse_shape(info.name, field.value());
      } else if (key == "data_offsets") {
        first_time(has_offsets, key);
        std::tie(info.begin, info.end) = parse_offsets(info.name, field.value());
      } else {
        // The reference implementation ignores fields it does not know; so do we.
        skip_value(field.value(), 0);
      }
    }
    if (!has_dtype) fail_tensor(info.name, "missing \"dtype\"");
    if (!has_shape) fail_tensor(info.name, "missing \"shape\"");
    if (!has_offsets) fail_tensor(info.name, "missing \"data_offsets\"");
    check_extent(info);
    return info;
  }

  Dtype parse_tensor_dtype(std::string_view tensor, od::value value) const {
    const auto type = type_of(value);
    if (type != od::json_type::string) {
      fail_tensor(tensor, "\"dtype\" is " + std::string(type_name(type)) + ", not a string");
    }
    const auto name = get_string(value);
    const auto dtype = parse_dtype(name);
    if (!dtype) fail_tensor(tensor, "unknown dtype " + json_string(name));
    return *dtype;
  }

  std::vector<std::int64_t> parse_shape(std::string_view tensor, od::value value) const {
    const auto type = type_of(value);
    if (type != od::json_type::array) {
      fail_tensor(tensor, "\"shape\" is " + std::string(type_name(type)) + ", not an array");
    }
    od::array array;
    if (const auto ec = value.get_array().get(array)) fail_json(ec);
    std::vector<std::int64_t> shape;
    parse_integers<std::int64_t>(tensor, "shape", array, [&](auto dim) { shape.push_back(dim); });
    return shape;
  }

  std::pair<std::uint64_t, std::uint64_t> parse_offsets(std::string_view tensor,
                                                        od::value value) const {
    const auto type = type_of(value);
    if (type != od::json_type::array) {
      fail_tensor(tensor, "\"data_offsets\" is " + std::string(type_name(type)) +
                              ", not an array of 2 integers");
    }
    od::array array;
    if (const auto ec = value.get_array().get(array)) fail_json(ec);
    std::array<std::uint64_t, 2> offsets{};
    std::size_t count = 0;
    parse_integers<std::uint64_t>(tensor, "data_offsets", array, [&](auto offset) {
      if (count < offsets.size()) offsets[count] = offset;
      ++count;
    });
    if (count != offsets.size()) {
      fail_tensor(tensor, "\"data_offsets\" must hold 2 entries (begin, end), not " +
                              std::to_string(count));
    }
    return {offsets[0], offsets[1]};
  }

  // Passes each element of `array`, the field `field` of `tensor`, to `sink`; each must be a
  // non-negative integer that fits T.
  template <typename T, typename Sink>
  void parse_integers(std::string_view tensor, std::string_view field, od::array& array,
                      Sink&& sink) const {
    std::size_t index = 0;
    for (auto element_result : array) {
      od::value element;
      if (const auto ec = std::move(element_result).get(element)) fail_json(ec);
      const auto type = type_of(element);
      T number = 0;
      bool valid = false;
      if (type == od::json_type::number) {
        if constexpr (std::is_signed_v<T>) {
          valid = element.get_int64().get(number) == simdjson::SUCCESS && number >= 0;
        } else {
          valid = element.get_uint64().get(number) == simdjson::SUCCESS;
        }
      }
      if (!valid) {
        // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about "literal" + string.
        std::string where = "\"";
        where.append(field).append("\"[").append(std::to_string(index)).append("] is ");
        if (type != od::json_type::number) {
          fail_tensor(tensor, where + std::string(type_name(type)) + ", not a non-negative integer");
        }
        fail_tensor(tensor, where + std::string(trimmed_token(element)) +
                                ", not a non-negative integer that fits " +
                                (std::is_signed_v<T> ? "int64" : "uint64"));
      }
      sink(number);
      ++index;
    }
  }

  static std::string_view trimmed_token(od::value& value) {
    auto token = value.raw_json_token();
    while (!token.empty() && std::strchr(" \t\r\n", token.back()) != nullptr) {
      token.remove_suffix(1);
    }
    return token;
  }

  void skip_value(od::value value, int depth) const {
    if (depth > max_skipped_depth) fail("invalid JSON (unknown field nested too deeply)");
    switch (type_of(value)) {
      case od::json_type::object: {
        od::object object;
        if (const auto ec = value.get_object().get(object)) fail_json(ec);
        for (auto field_result : object) {
          od::field field;
          if (const auto ec = std::move(field_result).get(field)) fail_json(ec);
          std::string_view key;
          if (const auto ec = field.unescaped_key().get(key)) fail_json(ec);
          skip_value(field.value(), depth + 1);
        }
        return;
      }
      case od::json_type::array: {
        od::array array;
        if (const auto ec = value.get_array().get(array)) fail_json(ec);
        for (auto element_result : array) {
          od::value element;
          if (const auto ec = std::move(element_result).get(element)) fail_json(ec);
          skip_value(element, depth + 1);
        }
        return;
      }
      case od::json_type::string:
        get_string(value);
        return;
      case od::json_type::number: {
        double number = 0;
        if (const auto ec = value.get_double().get(number)) fail_json(ec);
        return;
      }
      case od::json_type::boolean: {
        bool flag = false;
        if (const auto ec = value.get_bool().get(flag)) fail_json(ec);
        return;
      }
      case od::json_type::null: {
        bool is_null = false;
        if (const auto ec = value.is_null().get(is_null)) fail_json(ec);
        if (!is_null) fail("invalid JSON (malformed null)");
        return;
      }
    }
  }

  // Offsets in order and inside the data region, and exactly as many bytes as the shape needs.
  void check_extent(const TensorInfo& info) const {
    if (info.begin > info.end) {
      fail_tensor(info.name, "\"data_offsets\" [" + std::to_string(info.begin) + ", " +
                                 std::to_string(info.end) + "]: begin is after end");
    }
    if (info.end > data_size_) {
      fail_tensor(info.name, "\"data_offsets\" end " + std::to_string(info.end) +
                                 " is beyond the data region (" + std::to_string(data_size_) +
                                 " bytes)");
    }
    const auto numel = checked_numel(info.shape);
    std::uint64_t expected = 0;
    if (!numel || __builtin_mul_overflow(*numel, element_size(info.dtype), &expected)) {
      fail_tensor(info.name, "shape " + shape_string(info.shape) + " has too many elements");
    }
    if (info.byte_size() != expected) {
      fail_tensor(info.name, "\"data_offsets\" [" + std::to_string(info.begin) + ", " +
                                 std::to_string(info.end) + "] span " +
                                 std::to_string(info.byte_size()) + " bytes but shape " +
                                 shape_string(info.shape) + " of " +
                                 std::string(dtype_name(info.dtype)) + " needs " +
                                 std::to_string(expected));
    }
  }

  void check_unique_names() const {
    std::unordered_set<std::string_view> names;
    names.reserve(header_.tensors.size());
    for (const auto& tensor : header_.tensors) {
      if (!names.insert(tensor.name).second) fail_tensor(tensor.name, "appears more than once");
    }
  }

  // Expects tensors sorted by begin. Zero-byte tensors occupy nothing and overlap nothing.
  void check_no_overlap() const {
    const TensorInfo* furthest = nullptr;
    for (const auto& tensor : header_.tensors) {
      if (tensor.byte_size() == 0) continue;
      if (furthest != nullptr && tensor.begin < furthest->end) {
        fail_tensor(tensor.name, "bytes [" + std::to_string(tensor.begin) + ", " +
                                     std::to_string(tensor.end) + ") overlap tensor " +
                                     json_string(furthest->name) + " [" +
                                     std::to_string(furthest->begin) + ", " +
                                     std::to_string(furthest->end) + ")");
      }
      if (furthest == nullptr || tensor.end > furthest->end) furthest = &tensor;
    }
  }

  std::string_view object_;
  std::uint64_t data_size_ = 0;
  Header header_;
};

}  // namespace

std::uint64_t TensorInfo::numel() const {
  std::uint64_t product = 1;
  for (const auto dim : shape) product *= static_cast<std::uint64_t>(dim);
  return product;
}

std::uint64_t parse_header_length(std::span<const std::byte, 8> prefix, std::uint64_t object_size,
                                  std::string_view object) {
  const auto fail = [&](const std::string& detail) { return header_error(object, detail); };
  if (object_size < 8) {
    throw fail("the object is " + std::to_string(object_size) +
               " bytes, too small for the 8-byte header length");
  }
  std::uint64_t length = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    length |= static_cast<std::uint64_t>(prefix[i]) << (8 * i);
  }
  if (length > max_header_length) {
    throw fail("header length " + std::to_string(length) + " exceeds the limit of " +
               std::to_string(max_header_length) + " bytes");
  }
  if (8 + length > object_size) {
    throw fail("header length " + std::to_string(length) + " runs past the end of the object (" +
               std::to_string(object_size) + " bytes)");
  }
  return length;
}

Header parse_header(std::string_view json, std::uint64_t object_size, std::string_view object) {
  const auto fail = [&](const std::string& detail) { return header_error(object, detail); };
  if (json.size() > max_header_length) {
    throw fail("header length " + std::to_string(json.size()) + " exceeds the limit of " +
               std::to_string(max_header_length) + " bytes");
  }
  if (8 + json.size() > object_size) {
    throw fail("header length " + std::to_string(json.size()) +
               " runs past the end of the object (" + std::to_string(object_size) + " bytes)");
  }
  return JsonHeaderParser(object, object_size, json.size()).parse(json);
}

}  // namespace tensorstream
