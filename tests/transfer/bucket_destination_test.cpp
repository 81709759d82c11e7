// shard_checkpoint() and generate_synthetic_model() writing into an s3rver bucket through the S3
// ObjectWriter: the objects are byte for byte the files a local destination gets.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>

#include "safetensors/test_files.hpp"
#include "storage/s3rver_test.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The whole object at `url`.
std::string read_object(const std::string& url) {
  boost::asio::io_context io;
  const Url parsed = Url::parse(url);
  const auto store = open_store(parsed, io.get_executor());
  const auto size = testing::run_task(io, store->size(parsed.path));
  return testing::read_string(io, *store, parsed.path, 0, static_cast<std::size_t>(size));
}

// The keys under `prefix` of bucket "models", relative to it.
std::vector<std::string> objects_under(const std::string& prefix) {
  boost::asio::io_context io;
  const auto store = open_store(Url::parse("s3://models/"), io.get_executor());
  std::vector<std::string> names;
  for (const auto& object :
       testing::run_task(io, store->list("/" + prefix + "/", ListDepth::recursive))) {
    names.push_back(object.key.substr(prefix.size() + 2));
  }
  return names;
}

class BucketDestination : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    generate_synthetic_model(source_.path(), {.preset = "tiny", .shards = 2});
  }

  TempDir source_;
};

// Parts of 1 MiB give each of the 2 ranks several files; a 1 MiB single-PUT limit sends the larger
// ones up as multipart uploads of one part.
TEST_F(BucketDestination, ShardWritesTheRankFilesALocalDirectoryGetsByteForByte) {
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.max_part_size = 1 << 20;
  options.stream.memory_limit = 600 * 1024;
  options.write.single_put_limit = 1 << 20;
  TempDir local;
  const auto expected = shard_checkpoint(source_.path().string(), local.path(), options);
  const auto report = shard_checkpoint(source_.path().string(), "s3://models/ranks", options);

  ASSERT_GT(expected.files.size(), 2u);
  ASSERT_EQ(report.files.size(), expected.files.size());
  EXPECT_EQ(report.bytes, expected.bytes);
  EXPECT_EQ(report.tensors, expected.tensors);
  EXPECT_EQ(report.source_bytes, expected.source_bytes);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < report.files.size(); ++i) {
    const auto name = fs::path(expected.files[i]).filename().string();
    names.push_back(name);
    EXPECT_EQ(report.files[i], "s3://models/ranks/" + name);
    EXPECT_EQ(read_object(report.files[i]), read_file(expected.files[i])) << name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(objects_under("ranks"), names);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
}

TEST_F(BucketDestination, ShardRefusesAPrefixHoldingRankFilesItWouldNotReplace) {
  TempDir stale;
  std::ofstream(stale.path() / "model-rank-2-part-0.safetensors") << "earlier run";
  std::ofstream(stale.path() / "notes.txt") << "kept";
  s3rver_->put_directory("models", "ranks/", stale.path());
  ShardOptions options;
  options.tensor_parallel_size = 2;
  options.overwrite = true;  // which cannot delete what this run would not replace
  try {
    shard_checkpoint(source_.path().string(), "s3://models/ranks/", options);
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(),
                 "s3://models/ranks/model-rank-2-part-0.safetensors: left by an earlier run and "
                 "not replaced by this one, so it would mix with the new files; shard cannot "
                 "delete objects: remove it or write to another prefix");
  }
  EXPECT_EQ(objects_under("ranks"),
            (std::vector<std::string>{"model-rank-2-part-0.safetensors", "notes.txt"}));
}

TEST_F(BucketDestination, GeneratedModelStreamsBackFromTheBucket) {
  const auto model =
      generate_synthetic_model("s3://models/gen", {.preset = "tiny", .shards = 3, .index = true});
  EXPECT_EQ(model.shards,
            (std::vector<std::string>{"s3://models/gen/model-00001-of-00003.safetensors",
                                      "s3://models/gen/model-00002-of-00003.safetensors",
                                      "s3://models/gen/model-00003-of-00003.safetensors"}));
  EXPECT_EQ(objects_under("gen"),
            (std::vector<std::string>{"config.json", "generation_config.json",
                                      "model-00001-of-00003.safetensors",
                                      "model-00002-of-00003.safetensors",
                                      "model-00003-of-00003.safetensors",
                                      "model.safetensors.index.json", "tokenizer.json"}));
  EXPECT_EQ(read_object("s3://models/gen/config.json"),
            read_file(source_.path() / "config.json"));

  RawStreamer streamer("s3://models/gen/");
  std::vector<std::string> names;
  while (auto tensor = streamer.next_blocking()) {
    names.push_back(tensor->info.name);
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), tensor->bytes().begin(),
                           tensor->bytes().end()))
        << tensor->info.name;
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected_names;
  for (const auto& spec : llama_tensors(synthetic_preset("tiny"))) {
    expected_names.push_back(spec.name);
  }
  std::sort(expected_names.begin(), expected_names.end());
  EXPECT_EQ(names, expected_names);
}

}  // namespace
}  // namespace tensorstream
