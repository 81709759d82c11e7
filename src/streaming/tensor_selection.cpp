#include "tensorstream/streaming/tensor_selection.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "tensorstream/error.hpp"

namespace tensorstream {

TensorSelection select_by_name(std::vector<std::string> include, std::vector<std::string> exclude) {
  for (const auto* patterns : {&include, &exclude}) {
    if (std::any_of(patterns->begin(), patterns->end(), [](const auto& p) { return p.empty(); })) {
      throw InvalidArgument("an empty pattern matches no tensor name");
    }
  }
  if (include.empty() && exclude.empty()) return {};
  return [include = std::move(include), exclude = std::move(exclude)](const TensorInfo& tensor,
                                                                      const std::string&) {
    const auto matches = [&](const std::string& pattern) {
      return ::fnmatch(pattern.c_str(), tensor.name.c_str(), 0) == 0;
    };
    return (include.empty() || std::any_of(include.begin(), include.end(), matches)) &&
           std::none_of(exclude.begin(), exclude.end(), matches);
  };
}

}  // namespace tensorstream
