// The CLI over az://: ls across pages, stream with the checksums of the local files, the flags
// (--account, --endpoint-url, --no-sign-request), credential errors, and writes to a container,
// against Azurite.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "storage/azurite_test.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream::azure_cli_tests {

using testing::lines_of;
using testing::ProcessResult;
using testing::TempDir;
using Access = testing::AzuriteServer::PublicAccess;

ProcessResult cli(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), TENSORSTREAM_CLI_PATH);
  return testing::run_process(arguments);
}

class AzureCli : public azure::testing::AzuriteTest {
 protected:
  void SetUp() override {
    AzuriteTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    azurite().put_directory(container(), "tiny/", model_.path());
  }

  std::string size_line(const std::string& name) const {
    char line[256];
    std::snprintf(line, sizeof line, "%12llu  az://%s/tiny/%s",
                  static_cast<unsigned long long>(std::filesystem::file_size(model_.path() / name)),
                  container().c_str(), name.c_str());
    return line;
  }

  std::string az(const std::string& path) const { return "az://" + container() + "/" + path; }

  TempDir model_;
};

TEST_F(AzureCli, LsListsBlobsWithSizes) {
  set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  const auto result = cli({"ls", az("tiny/")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 7u) << result.out;
  EXPECT_EQ(lines[0], size_line("config.json"));
  EXPECT_EQ(lines[2], size_line("model-00001-of-00002.safetensors"));
  EXPECT_EQ(lines[5], size_line("tokenizer.json"));
  EXPECT_TRUE(lines[6].starts_with("6 objects, ")) << lines[6];
}

TEST_F(AzureCli, StreamGivesTheChecksumsOfTheLocalFilesWithTheKeyAndEndpointFlags) {
  set("AZURE_STORAGE_KEY", testing::AzuriteServer::account_key);
  const auto local = cli({"stream", model_.path().string() + "/", "--checksum", "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote = cli({"stream", az("tiny/"), "--checksum", "sha256", "--chunk-size", "100KB",
                           "--endpoint-url", azurite().blob_endpoint(), "--account",
                           testing::AzuriteServer::account_name, "-v"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out), testing::sorted_tensor_lines(local.out));
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out).size(),
            llama_tensors(synthetic_preset("tiny")).size());
  EXPECT_NE(remote.err.find("Azure credentials from AZURE_STORAGE_KEY"), std::string::npos)
      << remote.err;
}

TEST_F(AzureCli, StreamReadsBlobsIn64MiBRangesUnlessTold) {
  set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  unset("TENSORSTREAM_CHUNK_SIZE");
  const auto chosen_by_store = cli({"stream", az("tiny/"), "--json"});
  ASSERT_EQ(chosen_by_store.exit_code, 0) << chosen_by_store.err;
  EXPECT_EQ(testing::summary_value(chosen_by_store.out, "chunk_size"), 64ll << 20);
  const auto chosen_by_flag = cli({"stream", az("tiny/"), "--json", "--chunk-size", "1MiB"});
  ASSERT_EQ(chosen_by_flag.exit_code, 0) << chosen_by_flag.err;
  EXPECT_EQ(testing::summary_value(chosen_by_flag.out, "chunk_size"), 1ll << 20);
  set("TENSORSTREAM_CHUNK_SIZE", "2MiB");
  const auto chosen_by_environment = cli({"stream", az("tiny/"), "--json"});
  ASSERT_EQ(chosen_by_environment.exit_code, 0) << chosen_by_environment.err;
  EXPECT_EQ(testing::summary_value(chosen_by_environment.out, "chunk_size"), 2ll << 20);
}

TEST_F(AzureCli, NoSignRequestReadsAPublicContainer) {
  const std::string open = container() + "-public";
  azurite().create_container(open, Access::blob);
  azurite().put_directory(open, "tiny/", model_.path());
  const auto result =
      cli({"inspect", "az://" + open + "/tiny/model-00001-of-00002.safetensors",
           "--no-sign-request", "--endpoint-url", azurite().blob_endpoint()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST_F(AzureCli, AMissingBlobAndMissingCredentialsAreOneLineErrors) {
  set("AZURE_STORAGE_KEY", testing::AzuriteServer::account_key);
  const auto missing = cli({"inspect", az("tiny/absent.safetensors"), "--endpoint-url",
                            azurite().blob_endpoint()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "tensorstream: error: " + az("tiny/absent.safetensors") +
                             ": BlobNotFound (HTTP 404)\n");
  unset("AZURE_STORAGE_KEY");
  // No source of credentials answers; managed identity is pointed at a port nobody listens on.
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:9");
  const auto anonymous = cli({"inspect", az("tiny/model-00001-of-00002.safetensors"),
                              "--endpoint-url", azurite().blob_endpoint(), "--retries", "0"});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_TRUE(anonymous.err.starts_with("tensorstream: error: Azure credentials from "))
      << anonymous.err;
  EXPECT_EQ(std::count(anonymous.err.begin(), anonymous.err.end(), '\n'), 1) << anonymous.err;
}

TEST_F(AzureCli, NoStorageAccountIsARuntimeFailureAsMissingS3CredentialsAre) {
  const auto result = cli({"ls", az("tiny/")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "tensorstream: error: " + az("tiny/") +
                            ": no storage account: set AZURE_STORAGE_ACCOUNT or "
                            "AZURE_STORAGE_CONNECTION_STRING, or give --account\n");
}

TEST_F(AzureCli, GenModelToAContainerStreamsBackLikeItsLocalFiles) {
  set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  TempDir local;
  ASSERT_EQ(cli({"gen-model", local.path().string(), "--shards", "2"}).exit_code, 0);
  const auto generated = cli({"gen-model", az("generated"), "--shards", "2"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_EQ(generated.out, "wrote 21 tensors (3.8 MiB) in 2 shards to " + az("generated") + "\n");
  const auto expected = cli({"stream", local.path().string() + "/", "--checksum", "sha256"});
  const auto uploaded = cli({"stream", az("generated/"), "--checksum", "sha256"});
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_EQ(testing::sorted_tensor_lines(uploaded.out), testing::sorted_tensor_lines(expected.out));
}

TEST_F(AzureCli, CpCopiesABlobExactly) {
  set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  const auto copied = cli({"cp", az("tiny/model-00001-of-00002.safetensors"), az("copy.safetensors")});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_EQ(azurite().blob_sha256(container(), "copy.safetensors"),
            azurite().blob_sha256(container(), "tiny/model-00001-of-00002.safetensors"));
}

}  // namespace tensorstream::azure_cli_tests
