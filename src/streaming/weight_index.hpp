#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {

/// The name of the index a sharded checkpoint keeps beside its files.
inline constexpr std::string_view weight_index_name = "model.safetensors.index.json";

/// A checkpoint's index, inverted: each file it names (relative to the index's directory, in
/// lexicographic order) with the tensors it lists there (sorted).
using WeightIndex = std::map<std::string, std::vector<std::string>>;

/// An index that is not JSON or has no "weight_map". The Python original falls back to the
/// files present in that case, so the stream does too, unless the index was named explicitly.
class UnusableIndex : public FormatError {
 public:
  using FormatError::FormatError;
};

/// Parses the index `json` read from `object` (its URL, for messages). Throws UnusableIndex
/// ("OBJECT: not valid JSON (...)", "OBJECT: no \"weight_map\""), and FormatError naming `object`
/// when "weight_map" is not a non-empty object of strings, gives a tensor two files, or names a
/// file outside the index's directory.
WeightIndex parse_weight_index(std::string_view json, std::string_view object);

}  // namespace tensorstream::detail
