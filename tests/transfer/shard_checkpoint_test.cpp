#include "transfer/shard_checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

// Every tensor of rank `rank`'s files in `directory`, read as a tensor-parallel stream reads them.
std::map<std::string, StreamedTensor> read_rank(const std::filesystem::path& directory, int rank,
                                                int tp_size) {
  StreamerOptions options;
  options.rank = rank;
  options.tensor_parallel_size = tp_size;
  RawStreamer streamer(directory.string() + "/", options);
  std::map<std::string, StreamedTensor> tensors;
  while (auto tensor = streamer.next_blocking()) tensors.emplace(tensor->info.name, *tensor);
  return tensors;
}

std::vector<std::map<std::string, StreamedTensor>> read_ranks(
    const std::filesystem::path& directory, int tp_size) {
  std::vector<std::map<std::string, StreamedTensor>> ranks;
  for (int rank = 0; rank < tp_size; ++rank) ranks.push_back(read_rank(directory, rank, tp_size));
  return ranks;
}

// The dimension Llama's tensor-parallel layers split `name` on, written out independently of the
// rules under test; nullopt for replicated tensors.
std::optional<std::size_t> llama_split_dim(const std::string& name) {
  for (const auto* module :
       {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "embed_tokens", "lm_head"}) {
    if (name.find(std::string(module) + ".weight") != std::string::npos) return 0;
  }
  for (const auto* module : {"o_proj", "down_proj"}) {
    if (name.find(std::string(module) + ".weight") != std::string::npos) return 1;
  }
  return std::nullopt;
}

// The parts' bytes put back together along `dim`, taking the first rows[i] entries of part i
// along it.
std::vector<std::byte> concatenate(const std::vector<const StreamedTensor*>& parts, std::size_t dim,
                                   const std::vector<std::int64_t>& rows) {
  const auto& shape = parts.front()->info.shape;
  std::uint64_t outer = 1;
  for (std::size_t i = 0; i < dim; ++i) outer *= static_cast<std::uint64_t>(shape[i]);
  std::uint64_t row = element_size(parts.front()->info.dtype);
  for (std::size_t i = dim + 1; i < shape.size(); ++i) row *= static_cast<std::uint64_t>(shape[i]);
  std::vector<std::byte> bytes;
  for (std::uint64_t block = 0; block < outer; ++block) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto part_block = row * static_cast<std::uint64_t>(parts[i]->info.shape[dim]);
      const auto* begin = parts[i]->bytes().data() + block * part_block;
      bytes.insert(bytes.end(), begin, begin + row * static_cast<std::uint64_t>(rows[i]));
    }
  }
  return bytes;
}

bool same_bytes(const StreamedTensor& tensor, const std::vector<std::byte>& expected) {
  return tensor.bytes().size() == expected.size() &&
         std::memcmp(tensor.bytes().data(), expected.data(), expected.size()) == 0;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

class ShardTinyLlama : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    generate_synthetic_model(source_.path(), {.preset = "tiny", .shards = 2});
  }

  TempDir source_;
  TempDir destination_;
};

TEST_P(ShardTinyLlama, ConcatenatingTheRanksAlongTheSplitDimsGivesBackTheOriginalBytes) {
  const int tp_size = GetParam();
  const auto config = synthetic_preset("tiny");
  const auto specs = llama_tensors(config);
  ShardOptions options;
  options.tensor_parallel_size = tp_size;
  const auto report = shard_checkpoint(source_.path().string(), destination_.path(), options);
  EXPECT_EQ(report.tensors, specs.size());
  EXPECT_EQ(report.heads.num_attention_heads, 8);
  EXPECT_EQ(report.heads.num_key_value_heads, 4);
  EXPECT_EQ(report.heads.head_dim, 32);
  ASSERT_EQ(report.files.size(), static_cast<std::size_t>(tp_size));
  for (int rank = 0; rank < tp_size; ++rank) {
    EXPECT_EQ(report.files[rank], (destination_.path() / rank_file_name(rank, 0)).string());
  }

  const auto ranks = read_ranks(destination_.path(), tp_size);
  // With fewer key-value heads than ranks, each group of ranks shares one head.
  const int kv_group = std::max<int>(1, tp_size / static_cast<int>(config.num_kv_heads));
  for (const auto& spec : specs) {
    SCOPED_TRACE(spec.name);
    const auto original = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
    for (const auto& rank : ranks) ASSERT_EQ(rank.count(spec.name), 1u);
    const auto dim = llama_split_dim(spec.name);
    if (!dim) {
      for (const auto& rank : ranks) EXPECT_TRUE(same_bytes(rank.at(spec.name), original));
      continue;
    }
    const bool kv = spec.name.find("k_proj") != std::string::npos ||
                    spec.name.find("v_proj") != std::string::npos;
    const int group = kv ? kv_group : 1;
    std::vector<const StreamedTensor*> parts;
    std::vector<std::int64_t> rows;
    for (int rank = 0; rank < tp_size; rank += group) {
      const auto& part = ranks[rank].at(spec.name);
      auto expected_shape = spec.shape;
      expected_shape[*dim] /= tp_size / group;
      EXPECT_EQ(part.info.shape, expected_shape);
      for (int peer = rank + 1; peer < rank + group; ++peer) {
        EXPECT_EQ(std::memcmp(ranks[peer].at(spec.name).bytes().data(), part.bytes().data(),
                              part.bytes().size()),
                  0)
            << "ranks " << rank << " and " << peer << " share a key-value head";
      }
      parts.push_back(&part);
      rows.push_back(part.info.shape[*dim]);
    }
    EXPECT_EQ(concatenate(parts, *dim, rows), original);
  }
}

// 1 rank keeps every tensor whole, 2 ranks split every head, 8 ranks replicate the tiny model's 4
// key-value heads.
INSTANTIATE_TEST_SUITE_P(TensorParallelSizes, ShardTinyLlama, ::testing::Values(1, 2, 8));

TEST(ShardCheckpoint, VocabularyRowsArePaddedWithZerosOnTheLastRanks) {
  TempDir source;
  TempDir destination;
  write_text(source.path() / "config.json", R"({"hidden_size": 8, "num_attention_heads": 2})");
  const std::vector<TensorSpec> specs{{"model.embed_tokens.weight", Dtype::F32, {100, 8}},
                                      {"model.norm.weight", Dtype::F32, {8}}};
  write_safetensors(source.path() / "model.safetensors", specs,
                    [](const TensorSpec& spec, std::uint64_t offset, std::span<std::byte> out) {
                      fill_synthetic_bytes(spec.name, offset, out);
                    });
  ShardOptions options;
  options.tensor_parallel_size = 4;
  shard_checkpoint((source.path() / "model.safetensors").string(), destination.path(), options);

  // 100 rows → 128, 32 per rank: rank 3 holds rows 96..99, then 28 zero rows.
  const auto ranks = read_ranks(destination.path(), 4);
  std::vector<const StreamedTensor*> parts;
  for (const auto& rank : ranks) {
    const auto& part = rank.at("model.embed_tokens.weight");
    EXPECT_EQ(part.info.shape, (std::vector<std::int64_t>{32, 8}));
    parts.push_back(&part);
  }
  EXPECT_EQ(concatenate(parts, 0, {32, 32, 32, 4}),
            synthetic_bytes("model.embed_tokens.weight", 0, 100 * 8 * 4));
  const auto tail = ranks[3].at("model.embed_tokens.weight").bytes().subspan(4 * 8 * 4);
  EXPECT_EQ(std::count(tail.begin(), tail.end(), std::byte{0}), 28 * 8 * 4);
}

TEST(ShardCheckpoint, PartsAreCappedAndSplitBetweenTensorsInSourceOrder) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.max_part_size = 300 * 1024;
  const auto report = shard_checkpoint(source.path().string(), destination.path(), options);

  const auto specs = llama_tensors(synthetic_preset("tiny"));
  std::size_t files = 0;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    std::vector<std::string> names;
    for (int part = 0;; ++part) {
      const auto path = destination.path() / rank_file_name(rank, part);
      if (!std::filesystem::exists(path)) {
        EXPECT_GT(part, 1) << "the cap makes several parts";
        break;
      }
      ++files;
      const auto headers = inspect(path.string());
      std::uint64_t bytes = 0;
      for (const auto& info : headers[0].header.tensors) {
        names.push_back(info.name);
        bytes += info.byte_size();
      }
      EXPECT_TRUE(bytes <= options.max_part_size || headers[0].header.tensors.size() == 1) << part;
      // The next part's first tensor did not fit into this one.
      const auto next = destination.path() / rank_file_name(rank, part + 1);
      if (std::filesystem::exists(next)) {
        EXPECT_GT(bytes + inspect(next.string())[0].header.tensors[0].byte_size(),
                  options.max_part_size);
      }
    }
    ASSERT_EQ(names.size(), specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(names[i], specs[i].name);
  }
  EXPECT_EQ(report.files.size(), files);
}

TEST(ShardCheckpoint, StaysWithinAMemoryLimitFarBelowTheModel) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.stream.memory_limit = 600 * 1024;  // the tiny model is about 4 MiB
  EXPECT_EQ(shard_checkpoint(source.path().string(), destination.path(), options).tensors,
            llama_tensors(synthetic_preset("tiny")).size());
}

TEST(ShardCheckpoint, ReplacesEarlierRankFilesAndLeavesNothingPartial) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  write_text(destination.path() / "model-rank-3-part-0.safetensors", "stale");
  write_text(destination.path() / "model-rank-0-part-9.safetensors", "stale");
  write_text(destination.path() / "notes.txt", "kept");
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.overwrite = true;
  std::vector<ShardProgress> progress;
  options.on_progress = [&](const ShardProgress& now) { progress.push_back(now); };
  const auto report = shard_checkpoint(source.path().string(), destination.path(), options);
  ASSERT_EQ(progress.size(), report.tensors + 1);  // the start, then every tensor
  EXPECT_EQ(progress.front().bytes_written, 0u);
  EXPECT_EQ(progress.back().bytes_written, report.source_bytes);
  EXPECT_EQ(progress.back().bytes, report.source_bytes);
  EXPECT_EQ(progress.back().tensors_written, report.tensors);

  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(destination.path())) {
    names.insert(entry.path().filename().string());
  }
  EXPECT_EQ(names, (std::set<std::string>{"model-rank-0-part-0.safetensors",
                                          "model-rank-1-part-0.safetensors", "notes.txt"}));
}

TEST(ShardCheckpoint, ADestinationHoldingRankFilesIsRefusedWithoutOverwrite) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  write_text(destination.path() / "model-rank-0-part-0.safetensors", "earlier");
  ShardOptions options;
  options.tensor_parallel_size = 2;
  try {
    shard_checkpoint(source.path().string(), destination.path(), options);
    FAIL() << "the destination was written";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              destination.path().string() +
                  " already holds rank files (e.g. model-rank-0-part-0.safetensors); pass "
                  "--overwrite to replace them");
  }
  EXPECT_EQ(testing::read_file(destination.path() / "model-rank-0-part-0.safetensors"),
            "earlier");
}

TEST(ShardCheckpoint, ATensorThatCannotBeSplitFailsBeforeAnythingIsWritten) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  const auto target = destination.path() / "ranks";
  ShardOptions options;
  options.tensor_parallel_size = 3;
  try {
    shard_checkpoint(source.path().string(), target, options);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(),
                 "tensor \"model.embed_tokens.weight\": dim 0 of size 1024, padded to 1024, "
                 "cannot be split evenly over 3 ranks");
  }
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(ShardCheckpoint, KeyValueHeadsOfTheConfigCanBeOverridden) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.num_key_value_heads = 2;
  try {
    shard_checkpoint(source.path().string(), destination.path(), options);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(),
                 "tensor \"model.layers.0.self_attn.k_proj.weight\": dim 0 of size 128 is not 2 "
                 "key-value heads of size 32");
  }
}

TEST(ShardCheckpoint, MissingConfigIsAnErrorNamingIt) {
  TempDir source;
  TempDir destination;
  generate_synthetic_model(source.path(), {.preset = "tiny"});
  std::filesystem::remove(source.path() / "config.json");
  ShardOptions options;
  options.tensor_parallel_size = 2;
  try {
    shard_checkpoint(source.path().string(), destination.path(), options);
    FAIL() << "no error";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(error.object(), (source.path() / "config.json").string());
  }
}

}  // namespace
}  // namespace tensorstream
