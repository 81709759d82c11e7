#pragma once
/// @file
/// What an attach reply says about a rank: its shared-memory regions and where each tensor lies
/// in them. The server writes it (to_json), workers read it (parse_manifest).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream::store {

/// The manifest format this build writes and reads.
inline constexpr int manifest_version = 1;

/// Where tensors start within a region: a multiple of this many bytes.
inline constexpr std::uint64_t tensor_alignment = 256;

/// One shared-memory region of a rank, passed as one descriptor.
struct RegionInfo {
  std::string name;        ///< "weights" or "kv_cache".
  std::uint64_t bytes = 0;  ///< Size of the region (what to map).
  bool writable = false;    ///< false: sealed read-only (map PROT_READ); true: map read-write.
  std::size_t fd_index = 0;  ///< Position of its descriptor in the reply's SCM_RIGHTS array.

  bool operator==(const RegionInfo&) const = default;
};

/// One tensor of a rank, in one region.
struct TensorEntry {
  std::string name;                  ///< e.g. "model.layers.0.self_attn.qkv_proj.weight".
  Dtype dtype = Dtype::BF16;         ///< Element type.
  std::vector<std::int64_t> shape;   ///< Row-major, contiguous.
  std::string region;                ///< The RegionInfo::name it lies in.
  std::uint64_t offset = 0;          ///< First byte in the region, a multiple of tensor_alignment.
  std::uint64_t bytes = 0;           ///< numel × element size.

  bool operator==(const TensorEntry&) const = default;
};

/// The paged KV cache of a rank: for every layer l, tensors
/// `model.layers.{l}.self_attn.kv_cache.key` and `....value` of shape
/// [num_blocks, block_size, kv_heads, head_dim] in region "kv_cache", zero-filled.
struct KvCacheInfo {
  std::int64_t num_layers = 0;
  std::int64_t num_blocks = 0;
  std::int64_t block_size = 16;
  std::int64_t kv_heads = 0;   ///< Key-value heads on this rank (1 when replicated).
  std::int64_t head_dim = 0;
  Dtype dtype = Dtype::BF16;

  bool operator==(const KvCacheInfo&) const = default;
};

/// A rank as the server serves it.
struct Manifest {
  int version = manifest_version;
  int rank = 0;                       ///< Tensor-parallel rank.
  int tensor_parallel_size = 1;       ///< "tp" in JSON.
  /// Which of the server's loads this rank comes from: 1, then one more for every reload.
  std::uint64_t generation = 1;
  std::string device = "cpu";         ///< Where the memory is: "cpu" (shared memory).
  std::string model;                  ///< The URL the weights came from.
  std::string config_json;            ///< The model's config.json, verbatim ("config" in JSON).
  bool fused = true;                  ///< q/k/v and gate/up served fused.
  std::vector<RegionInfo> regions;    ///< In fd_index order.
  std::optional<KvCacheInfo> kv_cache;  ///< Absent when no KV cache is served.
  std::vector<TensorEntry> tensors;   ///< Weights, then the KV cache, each region by offset.

  bool operator==(const Manifest&) const = default;
};

/// The manifest as the JSON object of an attach reply:
///
///     {"version":1,"rank":1,"tp":2,"generation":1,"device":"cpu","model":"s3://…","config":{…},"fused":true,
///      "regions":[{"name":"weights","bytes":N,"writable":false,"fd_index":0},…],
///      "kv_cache":{"num_layers":L,"num_blocks":B,"block_size":16,"kv_heads":H,"head_dim":D,
///                  "dtype":"BF16"},
///      "tensors":[{"name":"…","dtype":"BF16","shape":[…],"region":"weights","offset":0,
///                  "bytes":…},…]}
///
/// `config` is config_json inserted as it is (it must be a JSON object); "kv_cache" is left out
/// when absent.
TENSORSTREAM_API
std::string to_json(const Manifest& manifest);

/// Parses and checks a manifest: the version, every field's type, regions whose fd_index values
/// are 0..n-1 without repeats, tensors of known dtypes whose bytes match their shape and lie
/// inside their region at aligned offsets. Every member but "kv_cache" and "generation" (1 when
/// absent, as from servers before reloads) is required; unknown
/// members are ignored. config_json is the raw text of "config" as it appears in `json` (not
/// re-serialized), so that parse_manifest(to_json(m)) == m. `where` names the source in messages
/// (the socket).
/// Throws FormatError naming `where` and the field.
TENSORSTREAM_API
Manifest parse_manifest(std::string_view json, std::string_view where);

}  // namespace tensorstream::store
