#include "tensorstream/store/manifest.hpp"

#include <simdjson.h>

#include <functional>
#include <limits>
#include <set>
#include <utility>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

namespace od = simdjson::ondemand;

void append_field(std::string& out, std::string_view key, std::string_view value_json) {
  if (out.back() != '{') out += ',';
  append_json_string(out, key);
  out += ':';
  out += value_json;
}

std::string number(std::integral auto value) { return std::to_string(value); }

std::string boolean(bool value) { return value ? "true" : "false"; }

// Reads a manifest field by field; every failure names the source and the field's path
// ("tensors[3].offset").
class ManifestParser {
 public:
  explicit ManifestParser(std::string_view where) : where_(where) {}

  Manifest parse(std::string_view json) {
    const simdjson::padded_string padded(json);
    od::parser parser;
    od::document doc;
    if (const auto ec = parser.iterate(padded).get(doc)) fail_json("", ec);
    od::object top;
    if (doc.get_object().get(top) != simdjson::SUCCESS) fail("", "not one JSON object");
    std::set<std::string, std::less<>> seen;
    for (auto field_result : top) {
      od::field field;
      if (const auto ec = std::move(field_result).get(field)) fail_json("", ec);
      std::string_view key;
      if (const auto ec = field.unescaped_key().get(key)) fail_json("", ec);
      const std::string name(key);
      if (!seen.insert(name).second) fail(name, "appears twice");
      od::value value = field.value();
      if (key == "version") {
        manifest_.version = int_in(value, name, 0, std::numeric_limits<int>::max());
        if (manifest_.version != manifest_version) {
          fail(name, std::to_string(manifest_.version) + " is not supported (this build reads " +
                         std::to_string(manifest_version) + ")");
        }
      } else if (key == "rank") {
        manifest_.rank = int_in(value, name, 0, std::numeric_limits<int>::max());
      } else if (key == "tp") {
        manifest_.tensor_parallel_size = int_in(value, name, 1, std::numeric_limits<int>::max());
      } else if (key == "generation") {
        manifest_.generation = uint64(value, name);
        if (manifest_.generation == 0) fail(name, "0 is out of range");
      } else if (key == "device") {
        manifest_.device = string(value, name);
      } else if (key == "model") {
        manifest_.model = string(value, name);
      } else if (key == "config") {
        od::object config = object(value, name);
        std::string_view raw;
        if (const auto ec = config.raw_json().get(raw)) fail_json(name, ec);
        manifest_.config_json = std::string(raw);
      } else if (key == "fused") {
        manifest_.fused = boolean(value, name);
      } else if (key == "regions") {
        parse_regions(value, name);
      } else if (key == "kv_cache") {
        manifest_.kv_cache = parse_kv_cache(value, name);
      } else if (key == "tensors") {
        parse_tensors(value, name);
      }
    }
    const char* trailing = nullptr;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) {
      fail("", "not one JSON object");
    }
    for (const char* required :
         {"version", "rank", "tp", "device", "model", "config", "fused", "regions", "tensors"}) {
      if (!seen.contains(required)) fail(required, "is missing");
    }
    check_regions();
    check_tensors();
    return std::move(manifest_);
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& detail) const {
    throw FormatError(where_ + ": invalid manifest: " + (field.empty() ? "" : field + " ") +
                      detail);
  }

  [[noreturn]] void fail_json(const std::string& field, simdjson::error_code ec) const {
    std::string_view cause = simdjson::error_message(ec);
    if (cause.ends_with('.')) cause.remove_suffix(1);
    fail(field, (field.empty() ? "invalid JSON (" : "is not valid JSON (") + std::string(cause) +
                    ")");
  }

  std::int64_t int64(od::value& value, const std::string& field) const {
    std::int64_t result = 0;
    if (value.get_int64().get(result) != simdjson::SUCCESS) fail(field, "is not an integer");
    return result;
  }

  int int_in(od::value& value, const std::string& field, std::int64_t low,
             std::int64_t high) const {
    const std::int64_t result = int64(value, field);
    if (result < low || result > high) {
      fail(field, std::to_string(result) + " is out of range");
    }
    return static_cast<int>(result);
  }

  std::int64_t count(od::value& value, const std::string& field) const {
    const std::int64_t result = int64(value, field);
    if (result < 0) fail(field, std::to_string(result) + " is negative");
    return result;
  }

  std::uint64_t uint64(od::value& value, const std::string& field) const {
    std::uint64_t result = 0;
    if (value.get_uint64().get(result) != simdjson::SUCCESS) {
      fail(field, "is not a non-negative integer");
    }
    return result;
  }

  std::string string(od::value& value, const std::string& field) const {
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) fail(field, "is not a string");
    return std::string(text);
  }

  bool boolean(od::value& value, const std::string& field) const {
    bool result = false;
    if (value.get_bool().get(result) != simdjson::SUCCESS) fail(field, "is not a boolean");
    return result;
  }

  Dtype dtype(od::value& value, const std::string& field) const {
    const std::string name = string(value, field);
    const auto parsed = parse_dtype(name);
    if (!parsed) fail(field, json_string(name) + " is not a known dtype");
    return *parsed;
  }

  od::object object(od::value& value, const std::string& field) const {
    od::object result;
    if (value.get_object().get(result) != simdjson::SUCCESS) fail(field, "is not an object");
    return result;
  }

  od::array array(od::value& value, const std::string& field) const {
    od::array result;
    if (value.get_array().get(result) != simdjson::SUCCESS) fail(field, "is not an array");
    return result;
  }

  // Calls `member(key, value, path)` for each field of `object`, then fails for any of
  // `required` that did not appear.
  template <class Member>
  void for_each_field(od::object object, const std::string& path,
                      std::initializer_list<std::string_view> required, Member&& member) const {
    std::set<std::string, std::less<>> seen;
    for (auto field_result : object) {
      od::field field;
      if (const auto ec = std::move(field_result).get(field)) fail_json(path, ec);
      std::string_view key;
      if (const auto ec = field.unescaped_key().get(key)) fail_json(path, ec);
      const std::string field_path = path + "." + std::string(key);
      if (!seen.emplace(key).second) fail(field_path, "appears twice");
      od::value value = field.value();
      member(key, value, field_path);
    }
    for (const auto key : required) {
      if (!seen.contains(key)) fail(path + "." + std::string(key), "is missing");
    }
  }

  void parse_regions(od::value& value, const std::string& field) {
    std::size_t index = 0;
    for (auto element_result : array(value, field)) {
      od::value element;
      if (const auto ec = std::move(element_result).get(element)) fail_json(field, ec);
      const std::string path = field + "[" + std::to_string(index++) + "]";
      RegionInfo region;
      for_each_field(object(element, path), path, {"name", "bytes", "writable", "fd_index"},
                     [&](std::string_view key, od::value& member, const std::string& member_path) {
                       if (key == "name") {
                         region.name = string(member, member_path);
                       } else if (key == "bytes") {
                         region.bytes = uint64(member, member_path);
                       } else if (key == "writable") {
                         region.writable = boolean(member, member_path);
                       } else if (key == "fd_index") {
                         region.fd_index = uint64(member, member_path);
                       }
                     });
      manifest_.regions.push_back(std::move(region));
    }
  }

  KvCacheInfo parse_kv_cache(od::value& value, const std::string& field) const {
    KvCacheInfo info;
    for_each_field(object(value, field), field,
                   {"num_layers", "num_blocks", "block_size", "kv_heads", "head_dim", "dtype"},
                   [&](std::string_view key, od::value& member, const std::string& path) {
                     if (key == "num_layers") {
                       info.num_layers = count(member, path);
                     } else if (key == "num_blocks") {
                       info.num_blocks = count(member, path);
                     } else if (key == "block_size") {
                       info.block_size = count(member, path);
                     } else if (key == "kv_heads") {
                       info.kv_heads = count(member, path);
                     } else if (key == "head_dim") {
                       info.head_dim = count(member, path);
                     } else if (key == "dtype") {
                       info.dtype = dtype(member, path);
                     }
                   });
    return info;
  }

  void parse_tensors(od::value& value, const std::string& field) {
    std::size_t index = 0;
    for (auto element_result : array(value, field)) {
      od::value element;
      if (const auto ec = std::move(element_result).get(element)) fail_json(field, ec);
      const std::string path = field + "[" + std::to_string(index++) + "]";
      TensorEntry tensor;
      for_each_field(object(element, path), path,
                     {"name", "dtype", "shape", "region", "offset", "bytes"},
                     [&](std::string_view key, od::value& member, const std::string& member_path) {
                       if (key == "name") {
                         tensor.name = string(member, member_path);
                       } else if (key == "dtype") {
                         tensor.dtype = dtype(member, member_path);
                       } else if (key == "shape") {
                         std::size_t dim = 0;
                         for (auto size_result : array(member, member_path)) {
                           od::value size;
                           if (const auto ec = std::move(size_result).get(size)) {
                             fail_json(member_path, ec);
                           }
                           tensor.shape.push_back(
                               count(size, member_path + "[" + std::to_string(dim++) + "]"));
                         }
                       } else if (key == "region") {
                         tensor.region = string(member, member_path);
                       } else if (key == "offset") {
                         tensor.offset = uint64(member, member_path);
                       } else if (key == "bytes") {
                         tensor.bytes = uint64(member, member_path);
                       }
                     });
      manifest_.tensors.push_back(std::move(tensor));
    }
  }

  void check_regions() const {
    const auto& regions = manifest_.regions;
    std::set<std::string, std::less<>> names;
    std::vector<bool> used(regions.size(), false);
    for (std::size_t i = 0; i < regions.size(); ++i) {
      const std::string path = "regions[" + std::to_string(i) + "]";
      if (!names.insert(regions[i].name).second) {
        fail(path + ".name", json_string(regions[i].name) + " appears twice");
      }
      const auto fd_index = regions[i].fd_index;
      if (fd_index >= regions.size()) {
        fail(path + ".fd_index", std::to_string(fd_index) + " is not below the number of regions (" +
                                     std::to_string(regions.size()) + ")");
      }
      if (used[fd_index]) fail(path + ".fd_index", std::to_string(fd_index) + " appears twice");
      used[fd_index] = true;
    }
  }

  void check_tensors() const {
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < manifest_.tensors.size(); ++i) {
      const auto& tensor = manifest_.tensors[i];
      const std::string path = "tensors[" + std::to_string(i) + "]";
      if (!names.insert(tensor.name).second) {
        fail(path + ".name", json_string(tensor.name) + " appears twice");
      }
      std::uint64_t expected = element_size(tensor.dtype);
      bool overflow = false;
      for (const auto dim : tensor.shape) {
        overflow = overflow ||
                   __builtin_mul_overflow(expected, static_cast<std::uint64_t>(dim), &expected);
      }
      if (overflow || expected != tensor.bytes) {
        fail(path + ".bytes",
             std::to_string(tensor.bytes) + " does not match its shape and dtype (" +
                 (overflow ? std::string("more than 2^64") : std::to_string(expected)) + ")");
      }
      const RegionInfo* region = nullptr;
      for (const auto& candidate : manifest_.regions) {
        if (candidate.name == tensor.region) region = &candidate;
      }
      if (region == nullptr) {
        fail(path + ".region", json_string(tensor.region) + " is not among the regions");
      }
      if (tensor.offset % tensor_alignment != 0) {
        fail(path + ".offset", std::to_string(tensor.offset) + " is not a multiple of " +
                                   std::to_string(tensor_alignment));
      }
      if (tensor.bytes > region->bytes || tensor.offset > region->bytes - tensor.bytes) {
        fail(path + ".offset", std::to_string(tensor.offset) + " + " +
                                   std::to_string(tensor.bytes) + " bytes exceeds region " +
                                   json_string(region->name) + " (" +
                                   std::to_string(region->bytes) + " bytes)");
      }
    }
  }

  std::string where_;
  Manifest manifest_;
};

}  // namespace

std::string to_json(const Manifest& manifest) {
  std::string out = "{";
  append_field(out, "version", number(manifest.version));
  append_field(out, "rank", number(manifest.rank));
  append_field(out, "tp", number(manifest.tensor_parallel_size));
  append_field(out, "generation", number(manifest.generation));
  append_field(out, "device", json_string(manifest.device));
  append_field(out, "model", json_string(manifest.model));
  append_field(out, "config", manifest.config_json.empty() ? "{}" : manifest.config_json);
  append_field(out, "fused", boolean(manifest.fused));
  out += ",\"regions\":[";
  for (std::size_t i = 0; i < manifest.regions.size(); ++i) {
    const auto& region = manifest.regions[i];
    if (i > 0) out += ',';
    out += '{';
    append_field(out, "name", json_string(region.name));
    append_field(out, "bytes", number(region.bytes));
    append_field(out, "writable", boolean(region.writable));
    append_field(out, "fd_index", number(region.fd_index));
    out += '}';
  }
  out += ']';
  if (const auto& kv = manifest.kv_cache) {
    out += ",\"kv_cache\":{";
    append_field(out, "num_layers", number(kv->num_layers));
    append_field(out, "num_blocks", number(kv->num_blocks));
    append_field(out, "block_size", number(kv->block_size));
    append_field(out, "kv_heads", number(kv->kv_heads));
    append_field(out, "head_dim", number(kv->head_dim));
    append_field(out, "dtype", json_string(dtype_name(kv->dtype)));
    out += '}';
  }
  out += ",\"tensors\":[";
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    const auto& tensor = manifest.tensors[i];
    if (i > 0) out += ',';
    out += '{';
    append_field(out, "name", json_string(tensor.name));
    append_field(out, "dtype", json_string(dtype_name(tensor.dtype)));
    std::string shape = "[";
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
      if (d > 0) shape += ',';
      shape += number(tensor.shape[d]);
    }
    append_field(out, "shape", shape + "]");
    append_field(out, "region", json_string(tensor.region));
    append_field(out, "offset", number(tensor.offset));
    append_field(out, "bytes", number(tensor.bytes));
    out += '}';
  }
  return out + "]}";
}

Manifest parse_manifest(std::string_view json, std::string_view where) {
  return ManifestParser(where).parse(json);
}

}  // namespace tensorstream::store
