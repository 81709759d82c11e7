// Signed URLs (presigned S3 and GCS URLs, Azure SAS URLs, signed CDN links): the query goes with
// every request, HEAD and ranges, for every object the URL leads to, and is shown nowhere.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::NginxServer;
using testing::run_cli;
using testing::sorted_tensor_lines;
using testing::TempDir;

constexpr const char* secret = "s3cr3t";

// nginx answering 403 under /signed/ to every request without Signature=s3cr3t, as a store
// does to one whose signature is wrong.
class SignedUrlCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(root_.path() / "signed" / "one", {.preset = "tiny"});
    generate_synthetic_model(root_.path() / "signed" / "sharded",
                             {.preset = "tiny", .shards = 2, .index = true});
    nginx_.emplace(NginxServer::Options{
        .root = root_.path(),
        .extra_config = "location /signed/ { if ($arg_Signature != \"" + std::string(secret) +
                        "\") { return 403; } }"});
  }

  std::string signed_url(const std::string& path, const std::string& signature = secret) const {
    return nginx_->base_url() + "/signed/" + path + "?Expires=1893456000&Signature=" + signature;
  }

  std::string shown(const std::string& path) const {
    return nginx_->base_url() + "/signed/" + path + "?…";
  }

  std::vector<std::string> local_lines(const std::string& path) const {
    const auto local = run_cli({"stream", (root_.path() / "signed" / path).string(), "--json",
                                "--checksum", "sha256"});
    EXPECT_EQ(local.exit_code, 0) << local.err;
    return sorted_tensor_lines(local.out);
  }

  TempDir root_;
  std::optional<NginxServer> nginx_;
};

TEST_F(SignedUrlCli, AFileStreamsWithItsQueryOnEveryRequestWhichNoOutputShows) {
  const auto streamed = run_cli({"stream", signed_url("one/model.safetensors"), "--json",
                                 "--checksum", "sha256", "-vv"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(sorted_tensor_lines(streamed.out), local_lines("one/model.safetensors"));
  EXPECT_FALSE(sorted_tensor_lines(streamed.out).empty());
  // The trace names every request, with its query as ?….
  EXPECT_NE(streamed.err.find("GET " + shown("one/model.safetensors") + " bytes=0-"),
            std::string::npos)
      << streamed.err;
  EXPECT_EQ(streamed.err.find(secret), std::string::npos) << streamed.err;
  EXPECT_EQ(streamed.out.find(secret), std::string::npos) << streamed.out;

  const auto summary = run_cli({"stream", signed_url("one/model.safetensors")});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find(" from " + shown("one/model.safetensors") + " in "),
            std::string::npos)
      << summary.out;
}

TEST_F(SignedUrlCli, AnIndexsQueryGoesWithEveryShardItNames) {
  const auto streamed = run_cli({"stream", signed_url("sharded/model.safetensors.index.json"),
                                 "--json", "--checksum", "sha256"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(sorted_tensor_lines(streamed.out), local_lines("sharded/"));
  const auto inspected = run_cli({"inspect", signed_url("sharded/model.safetensors.index.json")});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find(shown("sharded/model-00002-of-00002.safetensors")),
            std::string::npos)
      << inspected.out;
  EXPECT_EQ(inspected.out.find(secret), std::string::npos) << inspected.out;
}

TEST_F(SignedUrlCli, AWrongSignatureIsOneErrorLineThatShowsTheUrlWithoutItsQuery) {
  const auto refused =
      run_cli({"stream", signed_url("one/model.safetensors", "forged"), "--retries", "0"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err,
            "tensorstream: error: " + shown("one/model.safetensors") + ": HTTP 403 Forbidden\n");
}

}  // namespace
}  // namespace tensorstream
