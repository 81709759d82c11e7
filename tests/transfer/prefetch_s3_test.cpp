// prefetch() from s3rver: layouts a bucket can hold that a local directory listing cannot make.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "storage/s3rver_test.hpp"
#include "support/files.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/transfer/prefetch.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::write_file;
using testing::files_under;
using testing::TempDir;
using testing::random_bytes;

class PrefetchS3 : public s3::testing::S3rverTest {};

// What a killed prefetch leaves behind, uploaded with the rest: both files are copied as
// themselves. The two copies run side by side in 64 KiB reads, so that a temporary name a key can
// also have would be overwritten while in use; a few rounds give that race room to show.
TEST_F(PrefetchS3, AKeyAndItsNameWithPartialAppendedAreBothCopiedByteExact) {
  TempDir upload;
  const std::string key_bytes = random_bytes(700'000, 1);
  const std::string partial_bytes = random_bytes(500'000, 2);
  write_file(upload.path() / "tokenizer.json", key_bytes);
  write_file(upload.path() / "tokenizer.json.partial", partial_bytes);
  write_file(upload.path() / "config.json", "{}");
  s3rver_->put_directory("models", "llama/", upload.path());

  for (int round = 0; round < 4; ++round) {
    TempDir local;
    const auto result = prefetch_blocking("s3://models/llama/", local.path(),
                                          {.max_concurrency = 3, .chunk_size = 64 * 1024});
    const std::vector<std::string> expected{"config.json", "tokenizer.json",
                                            "tokenizer.json.partial"};
    EXPECT_EQ(result.files, expected);
    ASSERT_EQ(files_under(local.path()), expected) << "round " << round;
    ASSERT_EQ(read_file(local.path() / "tokenizer.json"), key_bytes) << "round " << round;
    ASSERT_EQ(read_file(local.path() / "tokenizer.json.partial"), partial_bytes)
        << "round " << round;
  }
}

// A bucket prefix as destination: uploads through the S3 writer (a 12 MiB file goes up as a
// multipart upload), read back byte-exact with a second prefetch, and copied bucket to bucket.
TEST_F(PrefetchS3, CopiesToABucketPrefixAndBetweenBuckets) {
  TempDir source;
  const std::string big = random_bytes(12 << 20, 3);
  const std::string vocab = random_bytes(300'000, 4);
  fs::create_directories(source.path() / "tokenizer");
  write_file(source.path() / "config.json", "{}");
  write_file(source.path() / "tokenizer" / "vocab.txt", vocab);
  write_file(source.path() / "extra.bin", big);

  const auto uploaded = prefetch_blocking(source.path().string(), "s3://models/copy");
  const std::vector<std::string> expected{"config.json", "extra.bin", "tokenizer/vocab.txt"};
  EXPECT_EQ(uploaded.files, expected);
  const auto copied = prefetch_blocking("s3://models/copy/", "s3://models/again/");
  EXPECT_EQ(copied.files, expected);

  TempDir back;
  const auto downloaded = prefetch_blocking("s3://models/again", back.path());
  EXPECT_EQ(downloaded.files, expected);
  EXPECT_EQ(read_file(back.path() / "config.json"), "{}");
  EXPECT_EQ(read_file(back.path() / "tokenizer" / "vocab.txt"), vocab);
  EXPECT_EQ(read_file(back.path() / "extra.bin"), big);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
}

TEST_F(PrefetchS3, AStoreThatCannotWriteIsRefusedBeforeCopying) {
  TempDir source;
  write_file(source.path() / "config.json", "{}");
  try {
    prefetch_blocking(source.path().string(), "http://127.0.0.1:1/copy");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "http://127.0.0.1:1/copy/config.json: this store is read-only; objects can be "
              "written to file://, s3://, gs:// and az:// only");
  }
}

}  // namespace
}  // namespace tensorstream
