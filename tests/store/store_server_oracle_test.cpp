// The store server checked against an oracle: for TP 1, 2 and 4, every tensor a worker attaches
// is the slice of the original tensor that vLLM's layers hold on that rank, and every fused tensor
// is torch::cat of its parts, byte for byte, whether the server read a TRAW tree from s3rver or
// cut a plain checkpoint served by nginx.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "model/vllm_oracle.hpp"
#include "storage/s3rver_test.hpp"
#include "store/served_model.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/store/attached_rank.hpp"
#include "tensorstream/store/torch_views.hpp"
#include "tensorstream/transfer/partition_checkpoint.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::TempDir;

// The oracle's bytes of rank `rank`'s part of `spec`, as a tensor of the rank's shape.
at::Tensor expected_part(const TensorSpec& spec, const LlamaConfig& config, int tp, int rank) {
  const auto full = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
  const auto cut = tensorstream::testing::vllm_cut(spec.name, spec.shape, config, tp, rank);
  const auto bytes = cut ? tensorstream::testing::cut_bytes(full, spec.shape, *cut) : full;
  const auto shape = cut ? tensorstream::testing::cut_shape(spec.shape, *cut) : spec.shape;
  // BF16 as 2-byte integers: equality of bytes, not of values (NaN != NaN).
  return at::from_blob(const_cast<std::byte*>(bytes.data()), shape, at::kShort).clone();
}

at::Tensor as_bits(const at::Tensor& tensor) { return tensor.view(at::kShort); }

// The stored tensors fused into `fused_name` on a rank, in order; empty for any other name.
std::vector<std::string> fused_parts(const std::string& name) {
  const auto replace = [&](const std::string& fused, std::vector<std::string> parts) {
    std::vector<std::string> names;
    if (!name.ends_with(fused)) return names;
    const auto prefix = name.substr(0, name.size() - fused.size());
    for (const auto& part : parts) names.push_back(prefix + part);
    return names;
  };
  if (auto qkv = replace("self_attn.qkv_proj.weight",
                         {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight"});
      !qkv.empty()) {
    return qkv;
  }
  return replace("mlp.gate_up_proj.weight", {"mlp.gate_proj.weight", "mlp.up_proj.weight"});
}

// Attaches every rank of a server of size `tp` and checks each tensor against the oracle, and the
// KV cache's shapes.
void expect_ranks_match_oracle(const fs::path& socket, const LlamaConfig& config, int tp) {
  std::map<std::string, TensorSpec> specs;
  for (const auto& spec : llama_tensors(config)) specs.emplace(spec.name, spec);
  for (int rank = 0; rank < tp; ++rank) {
    SCOPED_TRACE("TP" + std::to_string(tp) + " rank " + std::to_string(rank));
    const AttachedRank attached = attach(socket, static_cast<std::uint32_t>(rank));
    const auto tensors = torch_tensors(attached);
    std::size_t fused = 0;
    std::size_t stored = 0;
    for (const auto& [name, tensor] : tensors) {
      SCOPED_TRACE(name);
      if (name.find(".kv_cache.") != std::string::npos) {
        const std::int64_t kv_heads = std::max<std::int64_t>(1, config.num_kv_heads / tp);
        EXPECT_EQ(tensor.sizes().vec(),
                  (std::vector<std::int64_t>{7, 16, kv_heads, config.head_dim()}));
        EXPECT_EQ(tensor.count_nonzero().item<std::int64_t>(), 0);
        continue;
      }
      const auto parts = fused_parts(name);
      at::Tensor expected;
      if (parts.empty()) {
        expected = expected_part(specs.at(name), config, tp, rank);
        ++stored;
      } else {
        std::vector<at::Tensor> pieces;
        for (const auto& part : parts) {
          pieces.push_back(expected_part(specs.at(part), config, tp, rank));
        }
        expected = at::cat(pieces, 0);
        ++fused;
        stored += parts.size();
      }
      EXPECT_EQ(tensor.sizes(), expected.sizes());
      EXPECT_TRUE(at::equal(as_bits(tensor), expected));
    }
    EXPECT_EQ(fused, 2u * static_cast<std::size_t>(config.num_layers));
    EXPECT_EQ(stored, specs.size());
  }
}

StoreServerOptions serving(int tp, const fs::path& socket) {
  StoreServerOptions options;
  options.tensor_parallel_size = tp;
  options.kv_cache.num_blocks = 7;
  options.stream.chunk_size = 64 * 1024;
  options.stream.max_concurrency = 8;
  options.socket.path = socket;
  return options;
}

class StoreServerOracle : public s3::testing::S3rverTest {};

TEST_F(StoreServerOracle, ATrawTreeOnS3ServesEveryRankExactlyForTp1To4) {
  TempDir dir;
  const auto config = tensorstream::testing::gqa_config();
  tensorstream::testing::write_model(dir.path() / "model", config);
  PartitionOptions partition;
  partition.tensor_parallel_sizes = {1, 2, 4};
  partition_checkpoint_blocking((dir.path() / "model").string(), "s3://models/raw/", partition);
  for (const int tp : {1, 2, 4}) {
    ServedModel served("s3://models/raw/", serving(tp, dir.path() / "store.sock"));
    served.load();
    expect_ranks_match_oracle(served.socket(), config, tp);
  }
}

TEST(StoreServerOracleHttp, APlainCheckpointOverHttpIsCutForEveryRankExactlyForTp1To4) {
  if (!tensorstream::testing::NginxServer::available()) {
    TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  }
  TempDir dir;
  const auto config = tensorstream::testing::gqa_config();
  tensorstream::testing::write_model(dir.path() / "root" / "model", config);
  tensorstream::testing::NginxServer nginx({.root = dir.path() / "root"});
  for (const int tp : {1, 2, 4}) {
    ServedModel served(nginx.base_url() + "/model/", serving(tp, dir.path() / "store.sock"));
    served.load();
    expect_ranks_match_oracle(served.socket(), config, tp);
  }
}

}  // namespace
}  // namespace tensorstream::store::testing
