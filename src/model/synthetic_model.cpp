#include "tensorstream/model/synthetic_model.hpp"

#include <algorithm>
#include <bit>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>
#include <utility>

#include "base/blocking_run.hpp"
#include "base/json_string.hpp"
#include "storage/write_destination.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

// Wide enough for the products of two 64-bit sizes; a GCC extension, hence the marker that keeps
// -Wpedantic quiet about it.
__extension__ typedef unsigned __int128 Wide;

namespace asio = boost::asio;

// Content words are copied to memory as they are; the bytes must not depend on the host.
static_assert(std::endian::native == std::endian::little);

constexpr std::uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;

// splitmix64's output function. Applied to seed + (i + 1) × gamma it is the i-th output of a
// splitmix64 generator, so any word of a tensor can be computed without the ones before it.
constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t name_seed(std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char c : name) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  }
  return mix(hash);
}

// Each 16-bit lane keeps its random sign and mantissa and gets a BF16 exponent in [120, 127], so
// tensors hold finite, modest values: torch comparisons and arithmetic on them behave.
constexpr std::uint64_t bf16_keep_mask = 0x83FF83FF83FF83FFull;
constexpr std::uint64_t bf16_exponent_bits = 0x3C003C003C003C00ull;

std::uint64_t content_word(std::uint64_t seed, std::uint64_t index) {
  return (mix(seed + (index + 1) * golden_gamma) & bf16_keep_mask) | bf16_exponent_bits;
}

struct Preset {
  std::string_view name;
  LlamaConfig config;
};

constexpr Preset presets[] = {
    {"tiny", {.hidden_size = 256,
              .intermediate_size = 688,
              .num_layers = 2,
              .num_heads = 8,
              .num_kv_heads = 4,
              .vocab_size = 1024,
              .max_position_embeddings = 2048}},
    {"llama-7b-4layers", {.hidden_size = 4096,
                          .intermediate_size = 11008,
                          .num_layers = 4,
                          .num_heads = 32,
                          .num_kv_heads = 32,
                          .vocab_size = 32000,
                          .max_position_embeddings = 4096}},
};

std::string shard_name(int index, int count) {
  if (count == 1) return "model.safetensors";
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", index + 1, count);
  return name;
}

// Whether `name` is a file this generator writes as a shard or index.
bool is_generated_weights_file(std::string_view name) {
  if (name == "model.safetensors" || name == "model.safetensors.index.json") return true;
  constexpr std::string_view pattern = "model-#####-of-#####.safetensors";
  if (name.size() != pattern.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(name[i])) != 0;
    if (pattern[i] == '#' ? !digit : name[i] != pattern[i]) return false;
  }
  return true;
}

// Bytes of tensors are produced into this buffer and written from it, whatever their size.
constexpr std::uint64_t fill_buffer_size = 16ull << 20;

// Writes `tensors` as a safetensors file into `writer`, their bytes from fill_synthetic_bytes.
asio::awaitable<void> write_tensors(ObjectWriter& writer, std::span<const TensorSpec> tensors) {
  const auto header = encode_header(tensors);
  co_await writer.write(std::as_bytes(std::span(header)));
  std::vector<std::byte> buffer;
  for (const auto& tensor : tensors) {
    const auto size = tensor_byte_size(tensor);
    for (std::uint64_t done = 0; done < size;) {
      const auto piece = std::min(size - done, fill_buffer_size);
      if (buffer.size() < piece) buffer.resize(static_cast<std::size_t>(piece));
      const std::span<std::byte> out(buffer.data(), static_cast<std::size_t>(piece));
      fill_synthetic_bytes(tensor.name, done, out);
      co_await writer.write(out);
      done += piece;
    }
  }
}

std::string config_json(const LlamaConfig& c) {
  const auto field = [](std::string_view name, auto value) {
    return "  \"" + std::string(name) + "\": " + std::to_string(value) + ",\n";
  };
  return "{\n"
         "  \"architectures\": [\"LlamaForCausalLM\"],\n"
         "  \"model_type\": \"llama\",\n" +
         field("hidden_size", c.hidden_size) + field("intermediate_size", c.intermediate_size) +
         field("num_hidden_layers", c.num_layers) + field("num_attention_heads", c.num_heads) +
         field("num_key_value_heads", c.num_kv_heads) + field("vocab_size", c.vocab_size) +
         field("max_position_embeddings", c.max_position_embeddings) +
         "  \"hidden_act\": \"silu\",\n"
         "  \"initializer_range\": 0.02,\n"
         "  \"rms_norm_eps\": 1e-05,\n"
         "  \"rope_theta\": 10000.0,\n"
         "  \"rope_scaling\": null,\n"
         "  \"attention_bias\": false,\n"
         "  \"pretraining_tp\": 1,\n"
         "  \"tie_word_embeddings\": false,\n"
         "  \"bos_token_id\": 1,\n"
         "  \"eos_token_id\": 2,\n"
         "  \"use_cache\": true,\n"
         "  \"torch_dtype\": \"bfloat16\",\n"
         "  \"transformers_version\": \"4.36.2\"\n"
         "}\n";
}

constexpr std::string_view generation_config_json =
    "{\n"
    "  \"_from_model_config\": true,\n"
    "  \"bos_token_id\": 1,\n"
    "  \"eos_token_id\": 2,\n"
    "  \"transformers_version\": \"4.36.2\"\n"
    "}\n";

// A word-level tokenizer in the `tokenizers` format: small, but loadable by tools that open it.
constexpr std::string_view tokenizer_json = R"({
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true, "normalized": false,
     "single_word": false, "lstrip": false, "rstrip": false},
    {"id": 1, "content": "<s>", "special": true, "normalized": false,
     "single_word": false, "lstrip": false, "rstrip": false},
    {"id": 2, "content": "</s>", "special": true, "normalized": false,
     "single_word": false, "lstrip": false, "rstrip": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": null,
  "decoder": null,
  "model": {
    "type": "WordLevel",
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "the": 3, "model": 4, "streams": 5, "tensors": 6},
    "unk_token": "<unk>"
  }
}
)";

std::string index_json(std::uint64_t total_size,
                       std::vector<std::pair<std::string, std::string>> weight_map) {
  // Sorted by tensor name, as transformers writes it.
  std::sort(weight_map.begin(), weight_map.end());
  std::string out = "{\n  \"metadata\": {\"total_size\": " + std::to_string(total_size) +
                    "},\n  \"weight_map\": {";
  for (std::size_t i = 0; i < weight_map.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    append_json_string(out, weight_map[i].first);
    out += ": ";
    append_json_string(out, weight_map[i].second);
  }
  return out + "\n  }\n}\n";
}

// Splits tensors, in order, into `count` non-empty runs of about equal bytes: a tensor goes to the
// next shard when its middle lies past the current shard's share, or when every remaining tensor
// is needed to give each remaining shard one. Returns each tensor's shard.
std::vector<int> assign_shards(const std::vector<TensorSpec>& tensors, int count) {
  std::vector<std::uint64_t> sizes;
  std::uint64_t total = 0;
  for (const auto& tensor : tensors) total += sizes.emplace_back(tensor_byte_size(tensor));
  std::vector<int> shard_of(tensors.size());
  int shard = 0;
  std::uint64_t before = 0;  // bytes of the tensors already placed
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (i > 0 && shard < count - 1) {
      const auto tensors_left = tensors.size() - i;
      const auto shards_left = static_cast<std::size_t>(count - 1 - shard);
      // Compared as before + size/2 > (shard + 1) × total / count, scaled to stay in integers.
      const auto middle = static_cast<Wide>(2 * before + sizes[i]) * count;
      const auto share_end = static_cast<Wide>(2 * total) * (shard + 1);
      if (tensors_left == shards_left || middle > share_end) ++shard;
    }
    shard_of[i] = shard;
    before += sizes[i];
  }
  return shard_of;
}

}  // namespace

LlamaConfig synthetic_preset(std::string_view preset) {
  for (const auto& p : presets) {
    if (p.name == preset) return p.config;
  }
  throw InvalidArgument("unknown model preset \"" + std::string(preset) +
                        "\" (use tiny or llama-7b-4layers)");
}

std::vector<TensorSpec> llama_tensors(const LlamaConfig& c) {
  const auto kv_dim = c.num_kv_heads * c.head_dim();
  std::vector<TensorSpec> tensors;
  const auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    tensors.push_back({std::move(name), Dtype::BF16, std::move(shape)});
  };
  add("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  for (std::int64_t layer = 0; layer < c.num_layers; ++layer) {
    const auto prefix = "model.layers." + std::to_string(layer) + ".";
    add(prefix + "self_attn.q_proj.weight", {c.hidden_size, c.hidden_size});
    add(prefix + "self_attn.k_proj.weight", {kv_dim, c.hidden_size});
    add(prefix + "self_attn.v_proj.weight", {kv_dim, c.hidden_size});
    add(prefix + "self_attn.o_proj.weight", {c.hidden_size, c.hidden_size});
    add(prefix + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size});
    add(prefix + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size});
    add(prefix + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size});
    add(prefix + "input_layernorm.weight", {c.hidden_size});
    add(prefix + "post_attention_layernorm.weight", {c.hidden_size});
  }
  add("model.norm.weight", {c.hidden_size});
  add("lm_head.weight", {c.vocab_size, c.hidden_size});
  return tensors;
}

void fill_synthetic_bytes(std::string_view name, std::uint64_t offset,
                          std::span<std::byte> destination) {
  const auto seed = name_seed(name);
  auto index = offset / 8;
  std::byte* out = destination.data();
  std::size_t left = destination.size();
  if (const auto skip = offset % 8; skip != 0 && left > 0) {
    const auto word = content_word(seed, index++);
    const auto n = std::min<std::size_t>(8 - skip, left);
    std::memcpy(out, reinterpret_cast<const std::byte*>(&word) + skip, n);
    out += n;
    left -= n;
  }
  for (; left >= 8; out += 8, left -= 8) {
    const auto word = content_word(seed, index++);
    std::memcpy(out, &word, 8);
  }
  if (left > 0) {
    const auto word = content_word(seed, index);
    std::memcpy(out, &word, left);
  }
}

std::vector<std::byte> synthetic_bytes(std::string_view name, std::uint64_t offset,
                                       std::uint64_t length) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(length));
  fill_synthetic_bytes(name, offset, bytes);
  return bytes;
}

SyntheticModel generate_synthetic_model(const std::string& destination,
                                        const SyntheticModelOptions& options) {
  const auto config = synthetic_preset(options.preset);
  const auto tensors = llama_tensors(config);
  if (options.shards < 1 || static_cast<std::size_t>(options.shards) > tensors.size()) {
    throw InvalidArgument("shards must be between 1 and " + std::to_string(tensors.size()) +
                          " (the tensors of preset " + options.preset + "), got " +
                          std::to_string(options.shards));
  }
  asio::io_context io;
  auto target = detail::open_write_destination(destination, io.get_executor(), options.store,
                                               "config.json");
  const std::function<bool(std::string_view)> ours = is_generated_weights_file;
  const auto shard_of = assign_shards(tensors, options.shards);
  std::vector<std::string> weights;
  for (int shard = 0; shard < options.shards; ++shard) {
    weights.push_back(shard_name(shard, options.shards));
  }
  if (options.index) weights.push_back("model.safetensors.index.json");
  if (target.local) {
    std::error_code ec;
    std::filesystem::create_directories(target.prefix, ec);
    if (ec) throw StorageError(destination, "cannot create directory: " + ec.message());
    detail::remove_local_leftovers(target.prefix, ours, {});
  }

  SyntheticModel model;
  detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    co_await detail::refuse_leftovers(target, ours, weights, "gen-model");
    const auto write_text = [&](std::string_view name,
                                std::string_view text) -> asio::awaitable<void> {
      model.files.push_back(target.url(name));
      std::string key = target.key(name);
      co_await detail::write_object(*target.store, std::move(key), text);
    };
    const std::string config_text = config_json(config);
    co_await write_text("config.json", config_text);
    co_await write_text("generation_config.json", generation_config_json);
    co_await write_text("tokenizer.json", tokenizer_json);

    std::vector<std::pair<std::string, std::string>> weight_map;
    for (std::size_t begin = 0; begin < tensors.size();) {
      const auto shard = shard_of[begin];
      auto end = begin;
      while (end < tensors.size() && shard_of[end] == shard) ++end;
      const auto& name = weights[static_cast<std::size_t>(shard)];
      const std::span<const TensorSpec> members(tensors.data() + begin, end - begin);
      const auto writer = target.store->create_writer(target.key(name));
      auto writes = write_tensors(*writer, members);
      co_await detail::commit_or_abort(*writer, std::move(writes));
      for (const auto& tensor : members) {
        weight_map.emplace_back(tensor.name, name);
        model.tensor_bytes += tensor_byte_size(tensor);
      }
      model.files.push_back(target.url(name));
      model.shards.push_back(target.url(name));
      begin = end;
    }
    if (options.index) {
      const std::string index_text = index_json(model.tensor_bytes, std::move(weight_map));
      co_await write_text("model.safetensors.index.json", index_text);
    }
  }());
  model.tensors = tensors.size();
  return model;
}

}  // namespace tensorstream
