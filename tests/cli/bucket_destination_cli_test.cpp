// `gen-model` and `shard` with an s3:// destination: what they upload streams back exactly as the
// local files they write do.

#include <gtest/gtest.h>

#include <algorithm>

#include "storage/s3rver_test.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::run_cli;
using testing::sorted_tensor_lines;
using testing::TempDir;

class BucketDestinationCli : public s3::testing::S3rverTest {};

TEST_F(BucketDestinationCli, GenModelAndShardToABucketStreamBackLikeTheirLocalFiles) {
  TempDir local;
  const auto source = local.path() / "tiny";
  const auto ranks = local.path() / "ranks";
  ASSERT_EQ(run_cli({"gen-model", source.string(), "--shards", "2"}).exit_code, 0);
  const auto generated = run_cli({"gen-model", "s3://models/tiny", "--shards", "2"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_EQ(generated.out, "wrote 21 tensors (3.8 MiB) in 2 shards to s3://models/tiny\n");

  ASSERT_EQ(run_cli({"shard", source.string(), ranks.string(), "--tp", "2", "--max-part-size",
                     "1MiB"})
                .exit_code,
            0);
  const auto sharded = run_cli({"shard", "s3://models/tiny/", "s3://models/ranks", "--tp", "2",
                                "--max-part-size", "1MiB", "--memory-limit", "1MiB"});
  ASSERT_EQ(sharded.exit_code, 0) << sharded.err;
  EXPECT_NE(sharded.out.find(" in s3://models/ranks in "), std::string::npos) << sharded.out;

  const auto tensors = llama_tensors(synthetic_preset("tiny")).size();
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    const std::vector<std::string> flags{"--rank", std::to_string(rank), "--tp", "2",
                                         "--checksum", "sha256"};
    std::vector<std::string> expected_args{"stream", ranks.string() + "/"};
    std::vector<std::string> uploaded_args{"stream", "s3://models/ranks/"};
    expected_args.insert(expected_args.end(), flags.begin(), flags.end());
    uploaded_args.insert(uploaded_args.end(), flags.begin(), flags.end());
    const auto expected = run_cli(expected_args);
    const auto uploaded = run_cli(uploaded_args);
    ASSERT_EQ(expected.exit_code, 0) << expected.err;
    ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
    EXPECT_EQ(sorted_tensor_lines(uploaded.out).size(), tensors);
    EXPECT_EQ(sorted_tensor_lines(uploaded.out), sorted_tensor_lines(expected.out));
  }
}

}  // namespace
}  // namespace tensorstream
