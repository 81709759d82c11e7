// partition_checkpoint() checked against an oracle: every rank's tensor, streamed back from where
// it was written, must be the slice of the original tensor (with vocabulary padding) that vLLM's
// tensor-parallel Llama layers hold on that rank, byte for byte.

#include "tensorstream/transfer/partition_checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "model/vllm_oracle.hpp"
#include "storage/s3rver_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/files.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::files_under;
using testing::cut_bytes;
using testing::cut_shape;
using testing::gqa_config;
using testing::TempDir;
using testing::vllm_cut;
using testing::write_model;

// Streams rank `rank` of size `tp` back from `destination` and checks every tensor against the
// oracle. With `by_shard_prefix`, the shard's own prefix TP{tp}/shard{rank}/ is streamed as a plain
// checkpoint (how a safetensors-format tree is read) instead of selecting it with tp and rank.
void expect_rank_matches_oracle(const std::string& destination, const LlamaConfig& config, int tp,
                                int rank, bool by_shard_prefix = false) {
  SCOPED_TRACE("TP" + std::to_string(tp) + " rank " + std::to_string(rank));
  StreamerOptions options;
  options.chunk_size = 256 * 1024;
  std::string url = destination;
  if (by_shard_prefix) {
    url += "TP" + std::to_string(tp) + "/shard" + std::to_string(rank) + "/";
  } else {
    options.tensor_parallel_size = tp;
    options.rank = rank;
  }
  RawStreamer streamer(url, options);
  std::map<std::string, StreamedTensor> streamed;
  while (auto tensor = streamer.next_blocking()) streamed.emplace(tensor->info.name, *tensor);

  const auto tensors = llama_tensors(config);
  ASSERT_EQ(streamed.size(), tensors.size());
  for (const auto& spec : tensors) {
    SCOPED_TRACE(spec.name);
    const auto found = streamed.find(spec.name);
    ASSERT_NE(found, streamed.end());
    const auto full = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
    const auto cut = vllm_cut(spec.name, spec.shape, config, tp, rank);
    const auto expected = cut ? cut_bytes(full, spec.shape, *cut) : full;
    EXPECT_EQ(found->second.info.shape, cut ? cut_shape(spec.shape, *cut) : spec.shape);
    EXPECT_EQ(found->second.info.dtype, spec.dtype);
    const auto bytes = found->second.bytes();
    ASSERT_EQ(bytes.size(), expected.size());
    EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), expected.size()), 0);
  }
}

void expect_all_ranks_match_oracle(const std::string& destination, const LlamaConfig& config,
                                   const std::vector<int>& sizes, bool by_shard_prefix = false) {
  for (const int tp : sizes) {
    for (int rank = 0; rank < tp; ++rank) {
      expect_rank_matches_oracle(destination, config, tp, rank, by_shard_prefix);
    }
  }
}

PartitionOptions small_reads(std::vector<int> sizes = {1, 2, 4, 8}) {
  PartitionOptions options;
  options.tensor_parallel_sizes = std::move(sizes);
  options.stream.chunk_size = 64 * 1024;
  options.stream.max_concurrency = 8;
  return options;
}

TEST(PartitionCheckpoint, TinyLlamaWithFewerKeyValueHeadsThanRanksMatchesTheOracleForTp1To8) {
  TempDir dir;
  generate_synthetic_model(dir.path() / "model", {.preset = "tiny", .shards = 2, .index = true});
  const auto report = partition_checkpoint_blocking((dir.path() / "model").string(),
                                                    (dir.path() / "raw").string(), small_reads());
  const auto config = synthetic_preset("tiny");
  EXPECT_EQ(report.tensors, llama_tensors(config).size());
  EXPECT_EQ(report.objects, report.tensors * (1 + 2 + 4 + 8));
  EXPECT_EQ(report.heads.num_key_value_heads, 4);
  // The other files are copied; the index and the weights are not.
  const std::vector<std::string> artifacts{"config.json", "generation_config.json",
                                           "tokenizer.json"};
  EXPECT_EQ(report.artifacts, artifacts);
  EXPECT_FALSE(fs::exists(dir.path() / "raw" / "model.safetensors.index.json"));
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", config, {1, 2, 4, 8});
}

TEST(PartitionCheckpoint, EveryObjectIsATrawFileNamedAfterItsTensor) {
  TempDir dir;
  generate_synthetic_model(dir.path() / "model");
  const auto report = partition_checkpoint_blocking(
      (dir.path() / "model").string(), "file://" + (dir.path() / "raw").string(), small_reads({2}));
  const auto files = files_under(dir.path() / "raw");
  EXPECT_EQ(files.size(), report.objects + report.artifacts.size());
  EXPECT_TRUE(std::binary_search(files.begin(), files.end(),
                                 "TP2/shard1/model.layers.0.self_attn.q_proj.weight.bin"));
  std::uint64_t bytes = 0;
  for (const auto& file : files) {
    if (!file.ends_with(".bin")) continue;
    bytes += fs::file_size(dir.path() / "raw" / file);
    std::ifstream in(dir.path() / "raw" / file, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    EXPECT_EQ(std::string(magic, 4), "TRAW") << file;
  }
  EXPECT_EQ(bytes, report.bytes_written);
}

TEST(PartitionCheckpoint, GroupedQueryAttentionWithPaddedVocabularyMatchesTheOracle) {
  TempDir dir;
  write_model(dir.path() / "model", gqa_config());
  partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                small_reads());
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", gqa_config(), {1, 2, 4, 8});
}

TEST(PartitionCheckpoint, SafetensorsFormatWritesOneFilePerRankThatStreamsAsTheOracleSays) {
  TempDir dir;
  write_model(dir.path() / "model", gqa_config());
  auto options = small_reads({1, 4});
  options.format = PartitionFormat::safetensors;
  const auto report = partition_checkpoint_blocking((dir.path() / "model").string(),
                                                    (dir.path() / "raw").string(), options);
  EXPECT_EQ(report.objects, 5u);
  const std::vector<std::string> files{
      "TP1/shard0/model.safetensors", "TP4/shard0/model.safetensors",
      "TP4/shard1/model.safetensors", "TP4/shard2/model.safetensors",
      "TP4/shard3/model.safetensors", "config.json", "tokenizer.json"};
  EXPECT_EQ(files_under(dir.path() / "raw"), files);
  // A shard's directory is an ordinary safetensors prefix.
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", gqa_config(), {1, 4}, true);
}

// Rank files are written front to back, so the source is read in file order; holding tensors
// that arrive before their predecessors must not stall a limit below the model.
TEST(PartitionCheckpoint, SafetensorsFormatStaysWithinAMemoryLimitFarBelowTheModel) {
  TempDir dir;
  write_model(dir.path() / "model", gqa_config());
  auto options = small_reads({1, 2});
  options.format = PartitionFormat::safetensors;
  // Three local files take 3 MiB; the 12.8 MiB model's 5.9 MiB tensors come one at a time.
  options.stream.memory_limit = 9 << 20;
  partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                options);
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", gqa_config(), {1, 2}, true);
}

TEST(PartitionCheckpoint, StaysWithinAMemoryLimitFarBelowTheModel) {
  TempDir dir;
  write_model(dir.path() / "model", gqa_config());
  auto options = small_reads({1, 8});
  // The model is 12.8 MiB and its two largest tensors 5.9 MiB each. Three local writers take
  // 3 MiB of the limit, which leaves room for one of them at a time.
  options.stream.memory_limit = 9 << 20;
  options.max_uploads = 3;
  partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                options);
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", gqa_config(), {1, 8});
}

TEST(PartitionCheckpoint, AMemoryLimitTheUploadBuffersFillIsRefused) {
  TempDir dir;
  generate_synthetic_model(dir.path() / "model");
  auto options = small_reads({2});
  options.stream.memory_limit = 64 << 20;
  try {
    partition_checkpoint_blocking((dir.path() / "model").string(), "s3://bucket/raw/", options);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "partition: a memory limit of 64.0 MiB leaves nothing for source tensors beside "
              "the buffers of 8 objects written at once (136.0 MiB); raise the memory limit or "
              "write fewer objects at once");
  }
}

TEST(PartitionCheckpoint, ANonEmptyDestinationIsRefusedUnlessOverwriting) {
  TempDir dir;
  generate_synthetic_model(dir.path() / "model");
  fs::create_directories(dir.path() / "raw");
  std::ofstream(dir.path() / "raw" / "notes.txt") << "mine";
  try {
    partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                  small_reads({2}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              (dir.path() / "raw").string() + " is not empty (it holds 1 objects, e.g. " +
                  (dir.path() / "raw" / "notes.txt").string() +
                  "); pass --overwrite to write into it");
  }
  EXPECT_EQ(files_under(dir.path() / "raw"), std::vector<std::string>{"notes.txt"});

  auto options = small_reads({2});
  options.overwrite = true;
  partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                options);
  expect_all_ranks_match_oracle((dir.path() / "raw").string() + "/", synthetic_preset("tiny"),
                                {2});
  EXPECT_TRUE(fs::exists(dir.path() / "raw" / "notes.txt"));
}

TEST(PartitionCheckpoint, HeadsThatDoNotDivideFailBeforeAnythingIsWritten) {
  TempDir dir;
  generate_synthetic_model(dir.path() / "model");
  try {
    partition_checkpoint_blocking((dir.path() / "model").string(), (dir.path() / "raw").string(),
                                  small_reads({2, 16}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "tensor \"model.layers.0.self_attn.q_proj.weight\": the 8 attention heads of dim 0 "
              "cannot be split evenly over 16 ranks");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "raw"));
}

TEST(PartitionCheckpoint, ATensorItCannotPlaceFailsBeforeAnythingIsWritten) {
  TempDir dir;
  const fs::path model = dir.path() / "model";
  write_model(model, gqa_config());
  const std::vector<TensorSpec> extra{{"model.vision_tower.proj.weight", Dtype::BF16, {4, 4}}};
  write_safetensors(model / "vision.safetensors", extra,
                    [](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
                      std::fill(out.begin(), out.end(), std::byte{1});
                    });
  try {
    partition_checkpoint_blocking(model.string(), (dir.path() / "raw").string(), small_reads());
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              (model / "vision.safetensors").string() +
                  ": tensor \"model.vision_tower.proj.weight\" cannot be placed: it is not a "
                  "module of a Llama model (q/k/v/o_proj, gate/up/down_proj, embed_tokens, "
                  "lm_head) and has 2 dimensions, so neither splitting nor replicating it is "
                  "known to be right");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "raw"));
}

TEST(PartitionCheckpoint, ADestinationThatCannotBeWrittenIsRefusedBeforeReading) {
  TempDir dir;
  try {
    // The source does not exist: the destination is checked first.
    partition_checkpoint_blocking((dir.path() / "missing").string(), "http://127.0.0.1:9/raw/",
                                  small_reads());
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("http://127.0.0.1:9/raw/config.json"),
              std::string::npos)
        << error.what();
  }
}

TEST(PartitionCheckpoint, BadOptionsAreRefused) {
  const auto refused = [](std::vector<int> sizes, const std::string& message) {
    try {
      partition_checkpoint_blocking("/nonexistent", "/nonexistent-out", small_reads(sizes));
      ADD_FAILURE() << "expected InvalidArgument: " << message;
    } catch (const InvalidArgument& error) {
      EXPECT_EQ(std::string(error.what()), message);
    }
  };
  refused({}, "partition: no tensor-parallel size to write");
  refused({0}, "partition: tensor-parallel sizes must be at least 1, got 0");
  refused({2, 4, 2}, "partition: tensor-parallel size 2 is listed twice");
}

class PartitionS3 : public s3::testing::S3rverTest {
 protected:
  // The keys under `prefix` of the bucket "models", as a listing shows them.
  std::vector<std::string> keys(const std::string& prefix) {
    boost::asio::io_context io;
    auto store = open_store(Url::parse("s3://models/"), io.get_executor());
    std::vector<std::string> keys;
    for (const auto& object : testing::run_task(io, store->list(prefix, ListDepth::recursive))) {
      keys.push_back(object.key);
    }
    return keys;
  }
};

const std::string slow_down =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please "
    "reduce your request rate.</Message></Error>";

// From a bucket to a bucket: every TRAW object streamed back from s3rver is exact, the 6 MiB
// embedding of TP 1 went up in 5 MiB parts, and no multipart upload is left unfinished.
TEST_F(PartitionS3, BucketToBucketMatchesTheOracleAndLeavesNoUnfinishedUpload) {
  TempDir dir;
  write_model(dir.path(), gqa_config());
  s3rver_->put_directory("models", "hf/gqa/", dir.path());
  auto options = small_reads();
  options.write.single_put_limit = 5 << 20;
  options.write.part_size = 5 << 20;
  const auto report =
      partition_checkpoint_blocking("s3://models/hf/gqa/", "s3://models/raw/gqa/", options);
  EXPECT_EQ(report.objects, llama_tensors(gqa_config()).size() * 15);
  expect_all_ranks_match_oracle("s3://models/raw/gqa/", gqa_config(), {1, 2, 4, 8});
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
}

// The tiny preset, whose 4 key-value heads are replicated at TP 8, through s3rver.
TEST_F(PartitionS3, TinyLlamaMatchesTheOracleForTp1To8) {
  TempDir dir;
  generate_synthetic_model(dir.path());
  s3rver_->put_directory("models", "hf/tiny/", dir.path());
  partition_checkpoint_blocking("s3://models/hf/tiny/", "s3://models/raw/tiny/", small_reads());
  expect_all_ranks_match_oracle("s3://models/raw/tiny/", synthetic_preset("tiny"), {1, 2, 4, 8});
}

TEST_F(PartitionS3, ANonEmptyPrefixIsRefusedAndAMissingBucketFailsBeforeAnyUpload) {
  TempDir dir;
  generate_synthetic_model(dir.path());
  s3rver_->put_directory("models", "hf/tiny/", dir.path());
  try {
    partition_checkpoint_blocking("s3://models/hf/tiny/", "s3://models/hf/", small_reads({2}));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("s3://models/hf is not empty (it holds 4 objects"),
              std::string::npos)
        << error.what();
  }
  try {
    partition_checkpoint_blocking("s3://models/hf/tiny/", "s3://no-such-bucket/raw/",
                                  small_reads({2}));
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_NE(std::string(error.what()).find("no-such-bucket"), std::string::npos)
        << error.what();
  }
}

// SlowDowns and connections reset in the middle of a part are retried: the upload completes and
// every object is exact.
TEST_F(PartitionS3, SlowDownsAndResetsMidUploadAreRetriedAndEveryObjectIsExact) {
  TempDir dir;
  write_model(dir.path(), gqa_config());
  s3rver_->put_directory("models", "hf/gqa/", dir.path());
  testing::FaultProxy proxy(s3rver_->port(), {.fail_body = slow_down,
                                              .upload_fail_first = 6,
                                              .upload_reset_first = 6,
                                              .upload_cut_after = 16 * 1024});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  auto options = small_reads({1, 2, 4});
  options.write.single_put_limit = 5 << 20;
  options.write.part_size = 5 << 20;
  partition_checkpoint_blocking("s3://models/hf/gqa/", "s3://models/raw/gqa/", options);
  EXPECT_EQ(proxy.injected(), 12);
  expect_all_ranks_match_oracle("s3://models/raw/gqa/", gqa_config(), {1, 2, 4});
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
}

// A permanent failure stops the run with the object and the cause, and nothing partial is
// visible: the objects that failed are not there.
TEST_F(PartitionS3, APermanentUploadFailureNamesTheObjectAndLeavesNoPartialObject) {
  TempDir dir;
  generate_synthetic_model(dir.path());
  s3rver_->put_directory("models", "hf/tiny/", dir.path());
  const std::string denied =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
      "<Message>Access Denied</Message></Error>";
  testing::FaultProxy proxy(s3rver_->port(),
                            {.fail_status = 403, .fail_body = denied, .upload_fail_first = 1000});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  try {
    partition_checkpoint_blocking("s3://models/hf/tiny/", "s3://models/raw/tiny/",
                                  small_reads({2}));
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(message.starts_with("s3://models/raw/tiny/TP2/shard")) << message;
    EXPECT_TRUE(message.ends_with(".bin: AccessDenied: Access Denied (HTTP 403)")) << message;
  }
  set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  EXPECT_TRUE(keys("/raw/").empty());
}

// The same through gs://: read from and written to the GCS fixture, TP 1's 5.9 MiB embedding as a
// resumable upload in 5 MiB chunks, and no upload session left open.
TEST(PartitionGcs, BucketToBucketMatchesTheOracleAndLeavesNoOpenSession) {
  testing::GcsFixtureServer gcs({.require_token = false});
  testing::ScopedEnvironment environment(
      {"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST"});
  environment.set("STORAGE_EMULATOR_HOST", gcs.host());
  TempDir dir;
  write_model(dir.path(), gqa_config());
  gcs.put_directory("models", "hf/gqa/", dir.path());
  auto options = small_reads();
  options.write.single_put_limit = 5 << 20;
  options.write.part_size = 5 << 20;
  const auto report =
      partition_checkpoint_blocking("gs://models/hf/gqa/", "gs://models/raw/gqa/", options);
  EXPECT_EQ(report.objects, llama_tensors(gqa_config()).size() * 15);
  expect_all_ranks_match_oracle("gs://models/raw/gqa/", gqa_config(), {1, 2, 4, 8});
  EXPECT_EQ(gcs.unfinished_sessions(), 0u);
}

}  // namespace
}  // namespace tensorstream
