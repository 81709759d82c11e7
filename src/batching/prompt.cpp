#include "tensorstream/batching/prompt.hpp"

namespace tensorstream {

std::size_t Prompt::estimate_tokens() const noexcept { return text.size() / 4 + 1; }

}  // namespace tensorstream
