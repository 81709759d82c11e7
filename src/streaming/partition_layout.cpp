#include "streaming/partition_layout.hpp"

#include <charconv>

#include "streaming/traw_source.hpp"
#include "streaming/weight_index.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

// The number after `tag` in a segment such as "TP4" or "shard1", or nullopt for any other
// segment (leading zeros included: "TP04" is not what a writer produces).
std::optional<int> tagged_number(std::string_view segment, std::string_view tag) {
  if (!segment.starts_with(tag)) return std::nullopt;
  const std::string_view digits = segment.substr(tag.size());
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

template <typename Numbers>
std::string joined_keys(const Numbers& numbers) {
  std::string text;
  for (const auto& [number, unused] : numbers) {
    if (!text.empty()) text += ", ";
    text += std::to_string(number);
  }
  return text;
}

}  // namespace

PrefixLayout classify_listing(std::vector<ObjectInfo> listing, std::string_view prefix) {
  PrefixLayout layout;
  for (auto& object : listing) {
    if (!object.key.starts_with(prefix) || object.key.ends_with('/')) continue;
    const std::string_view relative = std::string_view(object.key).substr(prefix.size());
    const auto first_slash = relative.find('/');
    if (first_slash == std::string_view::npos) {
      if (relative.ends_with(".safetensors") || relative == weight_index_name) {
        layout.safetensors.push_back(std::move(object));
      } else if (relative.ends_with(traw_suffix)) {
        layout.traw_objects.push_back(std::move(object));
      }
      continue;
    }
    const auto second_slash = relative.find('/', first_slash + 1);
    if (second_slash == std::string_view::npos ||
        relative.find('/', second_slash + 1) != std::string_view::npos ||
        !relative.ends_with(traw_suffix)) {
      continue;
    }
    const auto size = tagged_number(relative.substr(0, first_slash), "TP");
    const auto rank =
        tagged_number(relative.substr(first_slash + 1, second_slash - first_slash - 1), "shard");
    if (size && rank) layout.partitions[*size][*rank].push_back(std::move(object));
  }
  return layout;
}

std::string partition_sizes(const PrefixLayout& layout) { return joined_keys(layout.partitions); }

std::vector<ObjectInfo> select_partition(const PrefixLayout& layout, const std::string& prefix_url,
                                         std::optional<int> tensor_parallel_size, int rank) {
  if (!tensor_parallel_size) {
    throw InvalidArgument(prefix_url +
                          ": holds TRAW partitions (TP sizes present: " + partition_sizes(layout) +
                          "); choose one with --tp N --rank R (StreamerOptions "
                          "tensor_parallel_size and rank), or name a shard's prefix");
  }
  const auto size = layout.partitions.find(*tensor_parallel_size);
  if (size == layout.partitions.end()) {
    throw NotFoundError(prefix_url, "no TP" + std::to_string(*tensor_parallel_size) +
                                        " partition; TP sizes present: " + partition_sizes(layout));
  }
  const auto shard = size->second.find(rank);
  if (shard == size->second.end()) {
    throw NotFoundError(prefix_url, "no shard" + std::to_string(rank) + " in TP" +
                                        std::to_string(*tensor_parallel_size) +
                                        "; shards present: " + joined_keys(size->second));
  }
  return shard->second;
}

bool names_partition(std::string_view prefix, int tensor_parallel_size, int rank) {
  return prefix.ends_with("/TP" + std::to_string(tensor_parallel_size) + "/shard" +
                          std::to_string(rank) + "/");
}

}  // namespace tensorstream::detail
