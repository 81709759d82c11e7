// `tensorstream cleanup URL`: what killed writers left, removed and reported line by line, for
// local directories and for s3:// (a scripted endpoint standing in for ListMultipartUploads).

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "storage/s3_fake_endpoint.hpp"
#include "storage/s3_test_environment.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

// 2026-01-02T03:04:05Z.
constexpr std::time_t long_ago = 1767323045;

// `time` in UTC, as strftime writes it with `format`.
std::string utc(std::time_t time, const char* format) {
  std::tm parts{};
  ::gmtime_r(&time, &parts);
  char text[64];
  std::strftime(text, sizeof text, format, &parts);
  return text;
}

void create(const fs::path& path, std::time_t modified) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "partial";
  const timespec times[2] = {{modified, 0}, {modified, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

class CleanupCli : public ::testing::Test {
 protected:
  void SetUp() override {
    create(dir() / "model.bin", long_ago);
    create(dir() / ".model.bin.tensorstream-41-00000000000000aa.tmp", long_ago);
    create(dir() / "tp" / ".rank-0.safetensors.tensorstream-7-00000000000000bb.tmp",
           long_ago + 3600);
    create(dir() / "tp" / ".rank-1.safetensors.tensorstream-7-00000000000000cc.tmp", now_);
  }

  const fs::path& dir() const { return dir_.path(); }

  // When the recent temporary was last written, as the command prints times.
  std::string now_text() const { return utc(now_, "%Y-%m-%dT%H:%M:%SZ"); }

  const std::time_t now_ = std::time(nullptr);
  TempDir dir_;
};

TEST_F(CleanupCli, RemovesTheTemporariesOlderThanAskedAndPrintsEach) {
  const auto result = run_cli({"cleanup", dir().string(), "--older-than", "1h"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string d = dir().string();
  EXPECT_EQ(result.out,
            "removed " + d + "/model.bin: upload " + d +
                "/.model.bin.tensorstream-41-00000000000000aa.tmp from 2026-01-02T03:04:05Z\n"
                "removed " + d + "/tp/rank-0.safetensors: upload " + d +
                "/tp/.rank-0.safetensors.tensorstream-7-00000000000000bb.tmp from "
                "2026-01-02T04:04:05Z\n"
                "2 stale uploads removed under " + d + "/; 1 more recent than 1h kept\n");
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(fs::exists(dir() / "model.bin"));
  EXPECT_FALSE(fs::exists(dir() / ".model.bin.tensorstream-41-00000000000000aa.tmp"));
  EXPECT_TRUE(fs::exists(dir() / "tp" / ".rank-1.safetensors.tensorstream-7-00000000000000cc.tmp"));

  const auto again = run_cli({"cleanup", "file://" + d + "/tp/", "--older-than", "1h"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "0 stale uploads removed under " + d + "/tp/; 1 more recent than 1h kept\n");
}

TEST_F(CleanupCli, WithoutOlderThanEverythingGoesAndJsonGivesOneObjectEach) {
  const auto result = run_cli({"cleanup", dir().string() + "/tp", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string tp = dir().string() + "/tp";
  EXPECT_EQ(result.out,
            "{\"url\":\"" + tp + "/rank-0.safetensors\",\"upload\":\"" + tp +
                "/.rank-0.safetensors.tensorstream-7-00000000000000bb.tmp\",\"started\":"
                "\"2026-01-02T04:04:05Z\"}\n"
                "{\"url\":\"" + tp + "/rank-1.safetensors\",\"upload\":\"" + tp +
                "/.rank-1.safetensors.tensorstream-7-00000000000000cc.tmp\",\"started\":\"" +
                now_text() +
                "\"}\n"
                "{\"summary\":{\"removed\":2,\"kept\":0}}\n");
  EXPECT_TRUE(fs::is_empty(dir() / "tp"));
}

TEST_F(CleanupCli, BadDurationsAndStoresWithoutWritersAreUsageErrors) {
  const auto bad = run_cli({"cleanup", dir().string(), "--older-than", "2w"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err,
            "tensorstream: error: --older-than: '2w' is not a duration such as 90s, 30m, 12h or "
            "7d\n");
  const auto http = run_cli({"cleanup", "http://127.0.0.1:1/models/"});
  EXPECT_EQ(http.exit_code, 2);
  EXPECT_EQ(http.err,
            "tensorstream: error: http://127.0.0.1:1/models/: nothing to clean up: no writer "
            "uploads to http://; cleanup works on file:// and s3://\n");
  EXPECT_TRUE(fs::exists(dir() / ".model.bin.tensorstream-41-00000000000000aa.tmp"));
}

// A mistyped directory holds no stale uploads either; it must not be reported clean.
TEST_F(CleanupCli, AMissingDirectoryIsAnErrorNamingIt) {
  const std::string missing = (dir() / "no-such").string();
  const auto result = run_cli({"cleanup", missing});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "tensorstream: error: " + missing + ": no such directory\n");
}

// The time a minute ago as S3 writes times: "2026-12-01T10:00:00.000Z".
std::string a_minute_ago() { return utc(std::time(nullptr) - 60, "%Y-%m-%dT%H:%M:%S.000Z"); }

class S3CleanupCli : public s3::testing::AwsEnvironmentTest {
 protected:
  S3CleanupCli() {
    set("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
    set("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
  }
};

TEST_F(S3CleanupCli, AbortsTheUploadsListedUnderThePrefix) {
  const auto upload = [](const std::string& key, const std::string& id,
                         const std::string& initiated) {
    return "<Upload><Key>" + key + "</Key><UploadId>" + id +
           "</UploadId><StorageClass>STANDARD</StorageClass><Initiated>" + initiated +
           "</Initiated></Upload>";
  };
  const std::string page =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListMultipartUploadsResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>models</Bucket>"
      "<Prefix>llama/</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>" +
      upload("llama/model-00001.safetensors", "2~a1", "2026-01-02T03:04:05.000Z") +
      upload("llama/config.json", "2~c3", "2026-01-02T04:04:05.000Z") +
      upload("llama/model-00002.safetensors", "2~b2", a_minute_ago()) +
      "</ListMultipartUploadsResult>";
  s3::testing::FakeEndpoint endpoint([&](const s3::testing::FakeEndpoint::Request& request) {
    if (request.method == "GET") return s3::testing::FakeEndpoint::Reply{200, page};
    return s3::testing::FakeEndpoint::Reply{204, ""};
  });
  const auto result = run_cli({"cleanup", "s3://models/llama", "--older-than", "30m",
                               "--endpoint-url", endpoint.url()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "removed s3://models/llama/config.json: upload 2~c3 from 2026-01-02T04:04:05Z\n"
            "removed s3://models/llama/model-00001.safetensors: upload 2~a1 from "
            "2026-01-02T03:04:05Z\n"
            "2 stale uploads removed under s3://models/llama/; 1 more recent than 30m kept\n");
  const auto requests = endpoint.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method + " " + requests[0].target,
            "GET /models/?prefix=llama%2F&uploads");
  EXPECT_EQ(requests[1].method + " " + requests[1].target,
            "DELETE /models/llama/model-00001.safetensors?uploadId=2~a1");
  EXPECT_EQ(requests[2].method + " " + requests[2].target,
            "DELETE /models/llama/config.json?uploadId=2~c3");
  for (const auto& request : requests) {
    EXPECT_TRUE(request.header("authorization").starts_with(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"))
        << request.header("authorization");
  }
}

}  // namespace
}  // namespace tensorstream
