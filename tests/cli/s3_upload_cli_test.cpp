// cp to s3:// when CompleteMultipartUpload's answer is lost and its retries fail: the objects
// are complete, and so is the command.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>

#include "storage/s3_upload_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"

namespace tensorstream {
namespace {

using testing::FaultProxy;
using testing::MiB;
using testing::read_file;
using testing::run_cli;
using testing::TempDir;

const std::string internal_error = s3::testing::response(
    "500 Internal Server Error",
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>"
    "<Message>We encountered an internal error. Please try again.</Message></Error>");

bool is_completion(const std::string& method, const std::string& target) {
  return method == "POST" && target.find("uploadId=") != std::string::npos;
}

class S3UploadCli : public s3::testing::S3rverTest {};

TEST_F(S3UploadCli, CpSucceedsWhenTheCompletionsAnswersAreLostAndTheirRetriesRefused) {
  TempDir model;
  std::filesystem::create_directory(model.path() / "big");
  const std::string first = testing::random_bytes(9 * MiB + 1, 31);
  const std::string second = testing::random_bytes(10 * MiB + 2, 32);
  std::ofstream(model.path() / "big" / "a.bin", std::ios::binary) << first;
  std::ofstream(model.path() / "big" / "b.bin", std::ios::binary) << second;

  // The first completion of each upload reaches s3rver and its answer is lost; its retries get
  // 500 InternalError, as s3rver answered them. Two retries keep the backoff short.
  std::mutex mutex;
  std::set<std::string> completed;
  FaultProxy proxy(s3rver_->port(),
                   {.answer = [&](const std::string& method, const std::string& target) {
                      if (!is_completion(method, target)) return std::string();
                      const std::lock_guard lock(mutex);
                      const bool first_try =
                          completed.insert(s3::testing::parameter(target, "uploadId")).second;
                      return first_try ? std::string() : internal_error;
                    },
                    .lose_answer = is_completion});
  const auto copied =
      run_cli({"cp", "-r", (model.path() / "big").string(), "s3://models/big", "--endpoint-url",
               proxy.endpoint(), "--response-timeout", "0.5", "--retries", "2", "--chunk-size",
               "5MiB"});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_EQ(proxy.injected(), 2);
  for (const std::string name : {"a.bin", "b.bin"}) {
    EXPECT_NE(copied.err.find("tensorstream: warning: s3://models/big/" + name +
                              ": InternalError: We encountered an internal error. Please try "
                              "again. (HTTP 500) (after 3 attempts); but the object is complete"),
              std::string::npos)
        << copied.err;
  }

  TempDir back;
  const auto fetched = run_cli({"cp", "-r", "s3://models/big", back.path().string(),
                                "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  EXPECT_EQ(read_file(back.path() / "a.bin"), first);
  EXPECT_EQ(read_file(back.path() / "b.bin"), second);
}

}  // namespace
}  // namespace tensorstream
