#include "tensorstream/store/rank_layout.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>

#include "tensorstream/error.hpp"
#include "tensorstream/model/head_config.hpp"

namespace tensorstream::store {
namespace {

constexpr std::string_view config_where = "config.json";
constexpr std::string_view layers_prefix = "model.layers.";

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw InvalidArgument(std::string(what) + ": size overflows 64 bits");
  }
  return sum;
}

std::uint64_t checked_multiply(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw InvalidArgument(std::string(what) + ": size overflows 64 bits");
  }
  return product;
}

std::uint64_t align_up(std::uint64_t offset, std::string_view what) {
  return checked_add(offset, (tensor_alignment - offset % tensor_alignment) % tensor_alignment,
                     what);
}

// A stored tensor that vLLM holds as part of a fused one: the fused tensor's name and the
// part's position in it.
struct FusedPart {
  std::string fused_name;
  std::size_t index = 0;
  std::size_t parts = 0;
};

struct PartRule {
  std::string_view suffix;
  std::string_view fused_suffix;
  std::size_t index;
  std::size_t parts;
};

constexpr std::array<PartRule, 8> part_rules{{
    {"self_attn.q_proj.weight", "self_attn.qkv_proj.weight", 0, 3},
    {"self_attn.k_proj.weight", "self_attn.qkv_proj.weight", 1, 3},
    {"self_attn.v_proj.weight", "self_attn.qkv_proj.weight", 2, 3},
    {"self_attn.q_proj.bias", "self_attn.qkv_proj.bias", 0, 3},
    {"self_attn.k_proj.bias", "self_attn.qkv_proj.bias", 1, 3},
    {"self_attn.v_proj.bias", "self_attn.qkv_proj.bias", 2, 3},
    {"mlp.gate_proj.weight", "mlp.gate_up_proj.weight", 0, 2},
    {"mlp.up_proj.weight", "mlp.gate_up_proj.weight", 1, 2},
}};

// The fused tensor `name` is part of, for names "model.layers.{i}.<part suffix>".
std::optional<FusedPart> fused_part(std::string_view name) {
  if (!name.starts_with(layers_prefix)) return std::nullopt;
  const auto rest = name.substr(layers_prefix.size());
  const auto digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || rest[digits] != '.') return std::nullopt;
  const auto suffix = rest.substr(digits + 1);
  for (const auto& rule : part_rules) {
    if (suffix == rule.suffix) {
      const auto prefix = name.substr(0, layers_prefix.size() + digits + 1);
      return FusedPart{std::string(prefix) + std::string(rule.fused_suffix), rule.index,
                       rule.parts};
    }
  }
  return std::nullopt;
}

// The parts of one fused tensor, by index into the stored tensors.
struct FusedGroup {
  std::array<std::optional<std::size_t>, 3> members;
  std::size_t parts = 0;
  bool placed = false;
};

bool fusable(const FusedGroup& group, std::span<const TensorSpec> tensors) {
  const auto& first = group.members[0];
  if (!first) return false;
  const auto& model = tensors[*first];
  if (model.shape.empty()) return false;
  for (std::size_t i = 1; i < group.parts; ++i) {
    if (!group.members[i]) return false;
    const auto& part = tensors[*group.members[i]];
    if (part.dtype != model.dtype || part.shape.size() != model.shape.size() ||
        !std::equal(part.shape.begin() + 1, part.shape.end(), model.shape.begin() + 1)) {
      return false;
    }
  }
  return true;
}

// Places each tensor after the previous one, at the next aligned offset.
class RegionCursor {
 public:
  explicit RegionCursor(std::string region) : region_(std::move(region)) {}

  std::uint64_t place(std::uint64_t bytes, std::string_view what) {
    const auto offset = align_up(end_, what);
    end_ = checked_add(offset, bytes, what);
    return offset;
  }

  const std::string& region() const { return region_; }
  std::uint64_t end() const { return end_; }

 private:
  std::string region_;
  std::uint64_t end_ = 0;
};

void lay_out_weights(std::span<const TensorSpec> tensors, bool fuse, RankLayout& layout) {
  std::unordered_set<std::string_view> stored;
  for (const auto& tensor : tensors) {
    if (!stored.insert(tensor.name).second) {
      throw InvalidArgument("tensor " + tensor.name + " is listed twice");
    }
  }

  std::vector<std::optional<FusedPart>> parts(tensors.size());
  std::map<std::string, FusedGroup> groups;
  if (fuse) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      parts[i] = fused_part(tensors[i].name);
      if (!parts[i]) continue;
      auto& group = groups[parts[i]->fused_name];
      group.parts = parts[i]->parts;
      group.members[parts[i]->index] = i;
    }
    std::erase_if(groups, [&](const auto& entry) { return !fusable(entry.second, tensors); });
    for (const auto& [fused_name, group] : groups) {
      if (stored.contains(fused_name)) {
        throw InvalidArgument("tensor " + fused_name +
                              " is stored and would also be fused from its parts");
      }
    }
  }

  RegionCursor cursor("weights");
  layout.placements.resize(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto group = parts[i] ? groups.find(parts[i]->fused_name) : groups.end();
    if (group == groups.end()) {
      const auto bytes = tensor_byte_size(tensors[i]);
      const auto offset = cursor.place(bytes, tensors[i].name);
      layout.placements[i] = {tensors[i].name, offset, bytes};
      layout.manifest.tensors.push_back({tensors[i].name, tensors[i].dtype, tensors[i].shape,
                                         cursor.region(), offset, bytes});
      continue;
    }
    if (group->second.placed) continue;
    group->second.placed = true;

    const auto& first = tensors[*group->second.members[0]];
    TensorSpec fused{group->first, first.dtype, first.shape};
    fused.shape[0] = 0;
    for (std::size_t part = 0; part < group->second.parts; ++part) {
      const auto dim = tensors[*group->second.members[part]].shape[0];
      if (__builtin_add_overflow(fused.shape[0], dim, &fused.shape[0])) {
        throw InvalidArgument("tensor " + fused.name + ": size overflows 64 bits");
      }
    }
    const auto bytes = tensor_byte_size(fused);
    const auto offset = cursor.place(bytes, fused.name);
    auto part_offset = offset;
    for (std::size_t part = 0; part < group->second.parts; ++part) {
      const auto index = *group->second.members[part];
      const auto part_bytes = tensor_byte_size(tensors[index]);
      layout.placements[index] = {tensors[index].name, part_offset, part_bytes};
      part_offset += part_bytes;
    }
    layout.manifest.tensors.push_back(
        {fused.name, fused.dtype, fused.shape, cursor.region(), offset, bytes});
  }
  layout.manifest.regions.push_back({cursor.region(), cursor.end(), false, 0});
}

std::int64_t parse_num_hidden_layers(std::string_view config_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  if (const auto failure = parser.parse(simdjson::padded_string(config_json)).get(document)) {
    throw InvalidArgument(std::string(config_where) +
                          ": invalid JSON: " + simdjson::error_message(failure));
  }
  const auto value = document["num_hidden_layers"];
  if (value.error() == simdjson::NO_SUCH_FIELD || value.is_null()) {
    throw InvalidArgument(std::string(config_where) + ": \"num_hidden_layers\" is missing");
  }
  std::int64_t layers = 0;
  if (value.get_int64().get(layers) != simdjson::SUCCESS) {
    throw InvalidArgument(std::string(config_where) + ": \"num_hidden_layers\" is not an integer");
  }
  if (layers <= 0) {
    throw InvalidArgument(std::string(config_where) +
                          ": \"num_hidden_layers\" must be positive, got " +
                          std::to_string(layers));
  }
  return layers;
}

std::int64_t kv_heads_per_rank(std::int64_t kv_heads, int tensor_parallel_size) {
  if (kv_heads % tensor_parallel_size == 0) return kv_heads / tensor_parallel_size;
  if (kv_heads < tensor_parallel_size && tensor_parallel_size % kv_heads == 0) return 1;
  throw InvalidArgument(std::string(config_where) + ": num_key_value_heads " +
                        std::to_string(kv_heads) +
                        " cannot be shared among tensor-parallel size " +
                        std::to_string(tensor_parallel_size));
}

Dtype default_kv_dtype(std::span<const TensorSpec> tensors) {
  const auto q_proj = std::find_if(tensors.begin(), tensors.end(), [](const auto& tensor) {
    return tensor.name.ends_with("q_proj.weight");
  });
  if (q_proj != tensors.end()) return q_proj->dtype;
  if (tensors.empty()) {
    throw InvalidArgument("--kv-dtype is needed: the rank has no tensors to take it from");
  }
  return tensors.front().dtype;
}

void lay_out_kv_cache(std::span<const TensorSpec> tensors, std::string_view config_json,
                      int tensor_parallel_size, const KvCacheOptions& options,
                      RankLayout& layout) {
  if (options.num_blocks && options.memory) {
    throw InvalidArgument("--kv-cache-blocks and --kv-cache-memory cannot both be given");
  }
  if (!options.num_blocks && !options.memory) return;
  if (options.num_blocks && *options.num_blocks < 1) {
    throw InvalidArgument("--kv-cache-blocks must be at least 1, got " +
                          std::to_string(*options.num_blocks));
  }

  const auto heads = parse_head_config(config_json, config_where);
  KvCacheInfo info;
  info.num_layers = parse_num_hidden_layers(config_json);
  info.block_size = options.block_size;
  info.kv_heads = kv_heads_per_rank(heads.num_key_value_heads, tensor_parallel_size);
  info.head_dim = heads.head_dim;
  info.dtype = options.dtype ? *options.dtype : default_kv_dtype(tensors);

  constexpr std::string_view what = "the KV cache";
  const auto block_bytes = checked_multiply(
      checked_multiply(checked_multiply(static_cast<std::uint64_t>(info.block_size),
                                        static_cast<std::uint64_t>(info.kv_heads), what),
                       static_cast<std::uint64_t>(info.head_dim), what),
      element_size(info.dtype), what);
  if (options.num_blocks) {
    info.num_blocks = *options.num_blocks;
  } else {
    const auto all_layers_block_bytes = checked_multiply(
        checked_multiply(2, static_cast<std::uint64_t>(info.num_layers), what), block_bytes, what);
    const auto blocks = *options.memory / all_layers_block_bytes;
    if (blocks == 0) {
      throw InvalidArgument(
          "--kv-cache-memory " + std::to_string(*options.memory) +
          " is less than one KV cache block: " + std::to_string(all_layers_block_bytes) +
          " bytes (K and V of " + std::to_string(info.num_layers) + " layers × block size " +
          std::to_string(info.block_size) + " × " + std::to_string(info.kv_heads) +
          " KV heads × head dim " + std::to_string(info.head_dim) + " × " +
          std::to_string(element_size(info.dtype)) + " bytes of " +
          std::string(dtype_name(info.dtype)) + ")");
    }
    info.num_blocks = static_cast<std::int64_t>(
        std::min<std::uint64_t>(blocks, std::numeric_limits<std::int64_t>::max()));
  }

  const auto tensor_bytes =
      checked_multiply(static_cast<std::uint64_t>(info.num_blocks), block_bytes, what);
  RegionCursor cursor("kv_cache");
  for (std::int64_t layer = 0; layer < info.num_layers; ++layer) {
    for (const std::string_view kind : {"key", "value"}) {
      const auto name = "model.layers." + std::to_string(layer) + ".self_attn.kv_cache." +
                        std::string(kind);
      const auto offset = cursor.place(tensor_bytes, what);
      layout.manifest.tensors.push_back(
          {name, info.dtype, {info.num_blocks, info.block_size, info.kv_heads, info.head_dim},
           cursor.region(), offset, tensor_bytes});
    }
  }
  layout.manifest.regions.push_back({cursor.region(), cursor.end(), true, 1});
  layout.manifest.kv_cache = info;
}

}  // namespace

const Placement* RankLayout::find(std::string_view name) const {
  const auto found = std::find_if(placements.begin(), placements.end(),
                                  [&](const Placement& placement) { return placement.name == name; });
  return found == placements.end() ? nullptr : &*found;
}

RankLayout plan_rank_layout(std::span<const TensorSpec> rank_tensors, std::string_view config_json,
                            int rank, int tensor_parallel_size, bool fuse,
                            const KvCacheOptions& kv_cache) {
  if (tensor_parallel_size < 1) {
    throw InvalidArgument("tensor-parallel size must be at least 1, got " +
                          std::to_string(tensor_parallel_size));
  }
  if (rank < 0 || rank >= tensor_parallel_size) {
    throw InvalidArgument("rank " + std::to_string(rank) + " is outside tensor-parallel size " +
                          std::to_string(tensor_parallel_size));
  }
  if (kv_cache.block_size < 1) {
    throw InvalidArgument("--block-size must be at least 1, got " +
                          std::to_string(kv_cache.block_size));
  }

  RankLayout layout;
  layout.manifest.rank = rank;
  layout.manifest.tensor_parallel_size = tensor_parallel_size;
  layout.manifest.fused = fuse;
  layout.manifest.config_json = std::string(config_json);
  lay_out_weights(rank_tensors, fuse, layout);
  lay_out_kv_cache(rank_tensors, config_json, tensor_parallel_size, kv_cache, layout);
  return layout;
}

}  // namespace tensorstream::store
