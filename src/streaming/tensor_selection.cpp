#include "tensorstream/streaming/tensor_selection.hpp"

#include "base/name_patterns.hpp"

namespace tensorstream {

TensorSelection select_by_name(std::vector<std::string> include, std::vector<std::string> exclude) {
  detail::NamePatterns patterns{std::move(include), std::move(exclude)};
  patterns.check("tensor name");
  if (patterns.empty()) return {};
  return [patterns = std::move(patterns)](const TensorInfo& tensor, const std::string&) {
    return patterns.selects(tensor.name);
  };
}

}  // namespace tensorstream
