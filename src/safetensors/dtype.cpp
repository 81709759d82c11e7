#include "tensorstream/safetensors/dtype.hpp"

#include <array>

namespace tensorstream {
namespace {

struct DtypeEntry {
  Dtype dtype;
  std::string_view name;
  std::size_t size;
};

// Indexed by the enum's value, so dtype_name and element_size are lookups.
constexpr std::array<DtypeEntry, 12> dtype_table{{
    {Dtype::F64, "F64", 8},
    {Dtype::F32, "F32", 4},
    {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},
    {Dtype::I64, "I64", 8},
    {Dtype::I32, "I32", 4},
    {Dtype::I16, "I16", 2},
    {Dtype::I8, "I8", 1},
    {Dtype::U8, "U8", 1},
    {Dtype::BOOL, "BOOL", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::F8_E4M3, "F8_E4M3", 1},
}};

constexpr bool table_matches_enum() {
  for (std::size_t i = 0; i < dtype_table.size(); ++i) {
    if (static_cast<std::size_t>(dtype_table[i].dtype) != i) return false;
  }
  return true;
}
static_assert(table_matches_enum());

const DtypeEntry& entry(Dtype dtype) { return dtype_table.at(static_cast<std::size_t>(dtype)); }

}  // namespace

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const auto& e : dtype_table) {
    if (e.name == name) return e.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_name(Dtype dtype) { return entry(dtype).name; }

std::size_t element_size(Dtype dtype) { return entry(dtype).size; }

}  // namespace tensorstream
