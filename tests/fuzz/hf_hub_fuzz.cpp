// The input is what the Hub sends or a user types: a revision document, a tree page, a Link
// header, or the key of an hf:// URL.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/hf/hub_api.hpp"
#include "storage/hf/repo_path.hpp"
#include "tensorstream/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string url = "hf://fuzz/model@main";
  try {
    if (!tensorstream::hf::is_commit(tensorstream::hf::parse_commit(text, url))) __builtin_trap();
  } catch (const tensorstream::FormatError&) {
  }
  try {
    for (const auto& file : tensorstream::hf::parse_tree_page(text, url)) {
      if (file.path.empty() || file.path.front() == '/') __builtin_trap();
    }
  } catch (const tensorstream::FormatError&) {
  }
  try {
    const auto next = tensorstream::hf::next_page_target(text, "https://huggingface.co", url);
    if (next && !next->starts_with('/')) __builtin_trap();
  } catch (const tensorstream::FormatError&) {
  }
  try {
    const auto where = tensorstream::hf::parse_repo_path("fuzz", text, url);
    if (where.revision.empty() || !where.repo.starts_with("fuzz/")) __builtin_trap();
  } catch (const tensorstream::InvalidArgument&) {
  }
  return 0;
}
