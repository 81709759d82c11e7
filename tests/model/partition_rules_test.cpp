#include "tensorstream/model/partition_rules.hpp"

#include <gtest/gtest.h>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

// The tiny preset's heads: hidden 256 = 8 heads of 32, 4 key-value heads.
constexpr HeadConfig tiny_heads{.num_attention_heads = 8, .num_key_value_heads = 4, .head_dim = 32};

TensorSpec bf16(std::string name, std::vector<std::int64_t> shape) {
  return {std::move(name), Dtype::BF16, std::move(shape)};
}

TensorPartition cut(std::vector<std::int64_t> shape, std::size_t dim, std::int64_t start,
                    std::int64_t length, std::int64_t padding = 0) {
  return {std::move(shape), TensorSlice{dim, start, length, padding}};
}

TensorPartition whole(std::vector<std::int64_t> shape) { return {std::move(shape), std::nullopt}; }

std::string partition_error(const TensorSpec& tensor, int tp_size, int rank = 0,
                            const HeadConfig& heads = tiny_heads) {
  try {
    partition_tensor(tensor, heads, tp_size, rank);
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no error";
}

TEST(PartitionRules, ColumnParallelWeightsAndBiasesSplitOnDim0) {
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.q_proj.weight", {256, 256}), tiny_heads,
                             2, 1),
            cut({128, 256}, 0, 128, 128));
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.q_proj.bias", {256}), tiny_heads, 2, 1),
            cut({128}, 0, 128, 128));
  EXPECT_EQ(
      partition_tensor(bf16("model.layers.1.mlp.gate_proj.weight", {688, 256}), tiny_heads, 4, 3),
      cut({172, 256}, 0, 516, 172));
  EXPECT_EQ(
      partition_tensor(bf16("model.layers.1.mlp.up_proj.weight", {688, 256}), tiny_heads, 2, 0),
      cut({344, 256}, 0, 0, 344));
}

TEST(PartitionRules, RowParallelWeightsSplitOnDim1AndKeepTheirBiasWhole) {
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.o_proj.weight", {256, 256}), tiny_heads,
                             2, 1),
            cut({256, 128}, 1, 128, 128));
  EXPECT_EQ(
      partition_tensor(bf16("model.layers.0.mlp.down_proj.weight", {256, 688}), tiny_heads, 2, 0),
      cut({256, 344}, 1, 0, 344));
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.o_proj.bias", {256}), tiny_heads, 2, 1),
            whole({256}));
}

TEST(PartitionRules, NormsScalarsAndUnknownTensorsAreReplicated) {
  for (const auto& tensor :
       {bf16("model.layers.0.input_layernorm.weight", {256}), bf16("model.norm.weight", {256}),
        bf16("model.layers.0.self_attn.rotary_emb.inv_freq", {16}), bf16("scale", {}),
        bf16("q_proj", {4, 4}), bf16("model.layers.0.mlp.gate_proj.scales", {688, 2})}) {
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(partition_tensor(tensor, tiny_heads, 4, rank), whole(tensor.shape)) << tensor.name;
    }
  }
}

TEST(PartitionRules, KeyValueHeadsSplitWhenEveryRankGetsWholeHeads) {
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.k_proj.weight", {128, 256}), tiny_heads,
                             4, 2),
            cut({32, 256}, 0, 64, 32));
  EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.v_proj.weight", {128, 256}), tiny_heads,
                             2, 1),
            cut({64, 256}, 0, 64, 64));
}

TEST(PartitionRules, FewerKeyValueHeadsThanRanksAreReplicatedHeadByHead) {
  // 8 ranks, 4 heads: ranks 0 and 1 hold head 0, ranks 2 and 3 head 1, and so on.
  for (int rank = 0; rank < 8; ++rank) {
    const std::int64_t head = rank / 2;
    EXPECT_EQ(partition_tensor(bf16("model.layers.0.self_attn.k_proj.weight", {128, 256}),
                               tiny_heads, 8, rank),
              cut({32, 256}, 0, head * 32, 32))
        << rank;
    EXPECT_EQ(
        partition_tensor(bf16("model.layers.0.self_attn.v_proj.bias", {128}), tiny_heads, 8, rank),
        cut({32}, 0, head * 32, 32))
        << rank;
  }
  const HeadConfig one_kv_head{.num_attention_heads = 8, .num_key_value_heads = 1, .head_dim = 32};
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(partition_tensor(bf16("l.k_proj.weight", {32, 256}), one_kv_head, 4, rank),
              cut({32, 256}, 0, 0, 32));
  }
}

TEST(PartitionRules, VocabularyIsPaddedToAMultipleOf64ThenSplitEvenly) {
  // 1000 rows → 1024, 256 per rank; the last rank holds rows 768..999 and 24 zero rows.
  const auto embed = bf16("model.embed_tokens.weight", {1000, 16});
  EXPECT_EQ(partition_tensor(embed, tiny_heads, 4, 0), cut({256, 16}, 0, 0, 256));
  EXPECT_EQ(partition_tensor(embed, tiny_heads, 4, 2), cut({256, 16}, 0, 512, 256));
  EXPECT_EQ(partition_tensor(embed, tiny_heads, 4, 3), cut({256, 16}, 0, 768, 232, 24));
  EXPECT_EQ(partition_tensor(bf16("lm_head.weight", {1000, 16}), tiny_heads, 1, 0),
            cut({1024, 16}, 0, 0, 1000, 24));
  // 10 rows → 64, 16 per rank: rank 0 holds all ten, the others only zeros.
  EXPECT_EQ(partition_tensor(bf16("lm_head.weight", {10, 8}), tiny_heads, 4, 0),
            cut({16, 8}, 0, 0, 10, 6));
  EXPECT_EQ(partition_tensor(bf16("lm_head.weight", {10, 8}), tiny_heads, 4, 1),
            cut({16, 8}, 0, 10, 0, 16));
  EXPECT_EQ(partition_tensor(bf16("lm_head.weight", {10, 8}), tiny_heads, 4, 3),
            cut({16, 8}, 0, 10, 0, 16));
}

TEST(PartitionRules, DimensionsThatDoNotDivideAreAnErrorNamingTensorDimAndRanks) {
  EXPECT_EQ(partition_error(bf16("model.layers.0.mlp.gate_proj.weight", {688, 256}), 3),
            "tensor \"model.layers.0.mlp.gate_proj.weight\": dim 0 of size 688 cannot be split "
            "evenly over 3 ranks");
  EXPECT_EQ(partition_error(bf16("model.layers.0.mlp.down_proj.weight", {256, 688}), 32),
            "tensor \"model.layers.0.mlp.down_proj.weight\": dim 1 of size 688 cannot be split "
            "evenly over 32 ranks");
  EXPECT_EQ(partition_error(bf16("model.embed_tokens.weight", {1000, 16}), 3),
            "tensor \"model.embed_tokens.weight\": dim 0 of size 1000, padded to 1024, cannot be "
            "split evenly over 3 ranks");
  EXPECT_EQ(partition_error(bf16("model.layers.0.self_attn.q_proj.weight", {256, 256}), 16),
            "tensor \"model.layers.0.self_attn.q_proj.weight\": the 8 attention heads of dim 0 "
            "cannot be split evenly over 16 ranks");
  EXPECT_EQ(partition_error(bf16("model.layers.0.self_attn.o_proj.weight", {256, 256}), 3),
            "tensor \"model.layers.0.self_attn.o_proj.weight\": the 8 attention heads of dim 1 "
            "cannot be split evenly over 3 ranks");
  const HeadConfig six_kv_heads{
      .num_attention_heads = 12, .num_key_value_heads = 6, .head_dim = 32};
  EXPECT_EQ(partition_error(bf16("l.k_proj.weight", {192, 384}), 4, 0, six_kv_heads),
            "tensor \"l.k_proj.weight\": the 6 key-value heads of dim 0 cannot be split evenly "
            "over 4 ranks");
  EXPECT_EQ(partition_error(bf16("l.v_proj.weight", {128, 256}), 6),
            "tensor \"l.v_proj.weight\": the 4 key-value heads of dim 0 cannot be replicated "
            "evenly over 6 ranks (the rank count must be a multiple of them)");
}

TEST(PartitionRules, AttentionRowsMustBeTheConfiguredHeads) {
  EXPECT_EQ(partition_error(bf16("l.k_proj.weight", {128, 256}), 2, 0,
                            {.num_attention_heads = 8, .num_key_value_heads = 2, .head_dim = 32}),
            "tensor \"l.k_proj.weight\": dim 0 of size 128 is not 2 key-value heads of size 32");
  EXPECT_EQ(partition_error(bf16("l.q_proj.weight", {256, 256}), 2, 0, {}),
            "tensor \"l.q_proj.weight\": splitting it needs the model's head layout "
            "(num_attention_heads, num_key_value_heads, head_dim), which is not set");
}

TEST(PartitionRules, SplitTensorsMustHaveTheExpectedDimensions) {
  EXPECT_EQ(partition_error(bf16("l.q_proj.weight", {256}), 2),
            "tensor \"l.q_proj.weight\": has 1 dimensions, expected 2 to split it over 2 ranks");
  EXPECT_EQ(partition_error(bf16("model.embed_tokens.weight", {2, 4, 8}), 2),
            "tensor \"model.embed_tokens.weight\": has 3 dimensions, expected 2 to split it over "
            "2 ranks");
}

TEST(PartitionRules, RankMustBeWithinTheTensorParallelSize) {
  EXPECT_EQ(partition_error(bf16("model.norm.weight", {256}), 2, 2), "rank 2 is outside [0, 2)");
  EXPECT_EQ(partition_error(bf16("model.norm.weight", {256}), 0, 0),
            "tensor-parallel size must be at least 1, got 0");
}

std::vector<std::byte> iota_bytes(std::size_t count) {
  std::vector<std::byte> bytes(count);
  for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::byte>(i);
  return bytes;
}

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> bytes;
  for (const int value : values) bytes.push_back(static_cast<std::byte>(value));
  return bytes;
}

std::vector<std::byte> fill_all(const TensorSpec& tensor, const TensorPartition& partition,
                                const std::vector<std::byte>& source) {
  std::vector<std::byte> out(tensor_byte_size({tensor.name, tensor.dtype, partition.shape}));
  fill_partition_bytes(tensor, partition, source, 0, out);
  return out;
}

TEST(PartitionBytes, ColumnSliceTakesTheSameColumnsOfEveryRow) {
  // I16 [3, 4]: each row is 8 bytes; columns 1..2 are bytes 2..5 of each row.
  const TensorSpec tensor{"t", Dtype::I16, {3, 4}};
  EXPECT_EQ(fill_all(tensor, cut({3, 2}, 1, 1, 2), iota_bytes(24)),
            bytes_of({2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21}));
}

TEST(PartitionBytes, RowSliceIsContiguousAndPaddingIsZeros) {
  const TensorSpec tensor{"t", Dtype::U8, {3, 2}};
  EXPECT_EQ(fill_all(tensor, cut({2, 2}, 0, 1, 2), iota_bytes(6)), bytes_of({2, 3, 4, 5}));
  EXPECT_EQ(fill_all(tensor, cut({4, 2}, 0, 2, 1, 3), iota_bytes(6)),
            bytes_of({4, 5, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(fill_all(tensor, whole({3, 2}), iota_bytes(6)), iota_bytes(6));
}

TEST(PartitionBytes, PiecesAtAnyOffsetMatchTheWhole) {
  // U8 [2, 3, 4] cut on dim 1 (rows 1..2 of 3, plus one zero row): blocks of 12 bytes per index of
  // dim 0.
  const TensorSpec tensor{"t", Dtype::U8, {2, 3, 4}};
  const auto partition = cut({2, 3, 4}, 1, 1, 2, 1);
  const auto source = iota_bytes(24);
  const auto expected =
      bytes_of({4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0, 16, 17, 18, 19, 20, 21, 22, 23, 0, 0, 0, 0});
  ASSERT_EQ(fill_all(tensor, partition, source), expected);
  for (std::size_t piece = 1; piece <= expected.size(); ++piece) {
    std::vector<std::byte> out(expected.size());
    for (std::size_t offset = 0; offset < out.size(); offset += piece) {
      const auto size = std::min(piece, out.size() - offset);
      fill_partition_bytes(tensor, partition, source, offset, std::span(out).subspan(offset, size));
    }
    EXPECT_EQ(out, expected) << "pieces of " << piece;
  }
}

TEST(PartitionBytes, SourceOfTheWrongSizeOrARangeOutsideTheRanksTensorIsAnError) {
  const TensorSpec tensor{"t", Dtype::U8, {3, 2}};
  std::vector<std::byte> out(4);
  try {
    fill_partition_bytes(tensor, cut({2, 2}, 0, 0, 2), iota_bytes(5), 0, out);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "tensor \"t\": 5 source bytes, expected 6");
  }
  try {
    fill_partition_bytes(tensor, cut({2, 2}, 0, 0, 2), iota_bytes(6), 1, out);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "tensor \"t\": bytes [1, 5) lie outside the rank's 4 bytes");
  }
}

}  // namespace
}  // namespace tensorstream
