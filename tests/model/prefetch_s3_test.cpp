// prefetch() from s3rver: layouts a bucket can hold that a local directory listing cannot make.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "storage/s3rver_test.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/prefetch.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::random_bytes;

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return std::move(content).str();
}

std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

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

}  // namespace
}  // namespace tensorstream
