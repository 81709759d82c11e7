// The Azurite fixture itself: it starts, and what it seeds through the Azure SDK reads back, so
// that the Azure store's tests can rely on it.

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/azurite_server.hpp"
#include "support/files.hpp"
#include "support/random_bytes.hpp"
#include "support/sha256.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream::testing::azurite_fixture_test {
namespace {

std::string sha256_of(const std::string& bytes) {
  return sha256_hex(std::as_bytes(std::span(bytes)));
}

TEST(AzuriteFixture, SeedsBlobsThatReadBackWithTheirDigest) {
  if (auto why = AzuriteServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  AzuriteServer azurite;
  EXPECT_EQ(azurite.blob_endpoint(),
            "http://127.0.0.1:" + std::to_string(azurite.port()) + "/devstoreaccount1");
  EXPECT_NE(azurite.connection_string().find("BlobEndpoint=" + azurite.blob_endpoint()),
            std::string::npos);

  TempDir dir;
  const std::string bytes = random_bytes(1 << 20, 7);
  write_file(dir.path() / "model.safetensors", bytes);
  azurite.create_container("models");
  azurite.put_blob("models", "llama/model.safetensors", dir.path() / "model.safetensors");
  azurite.put_blob("models", "llama/config.json", std::string("{}"));
  azurite.put_blob("models", "other.bin", std::string("x"));

  EXPECT_EQ(azurite.blob_sha256("models", "llama/model.safetensors"), sha256_of(bytes));
  EXPECT_EQ(azurite.blob_sha256("models", "llama/config.json"), sha256_of("{}"));
  EXPECT_EQ(azurite.blob_sha256("models", "llama/absent"), std::nullopt);
  EXPECT_EQ(azurite.list_blobs("models", "llama/"),
            (std::vector<std::string>{"llama/config.json", "llama/model.safetensors"}));
  EXPECT_EQ(azurite.list_blobs("models").size(), 3u);

  azurite.delete_blob("models", "other.bin");
  EXPECT_EQ(azurite.blob_sha256("models", "other.bin"), std::nullopt);
}

TEST(AzuriteFixture, MakesSasTokens) {
  if (auto why = AzuriteServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  AzuriteServer azurite;
  azurite.create_container("models");
  const std::string account = azurite.account_sas("rl");
  EXPECT_NE(account.find("sig="), std::string::npos) << account;
  EXPECT_NE(account.find("sp=rl"), std::string::npos) << account;
  const std::string container = azurite.container_sas("models", "r");
  EXPECT_NE(container.find("sig="), std::string::npos) << container;
  EXPECT_NE(container.find("sr=c"), std::string::npos) << container;
}

TEST(AzuriteFixture, ServesHttpsWithATestCa) {
  const AzuriteServer::Options options{.https = true};
  if (auto why = AzuriteServer::unavailable(options)) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  AzuriteServer azurite(options);
  EXPECT_EQ(azurite.blob_endpoint().rfind("https://127.0.0.1:", 0), 0u);
  EXPECT_TRUE(std::filesystem::exists(azurite.ca_file()));
  azurite.create_container("models", AzuriteServer::PublicAccess::blob);
  azurite.put_blob("models", "a", std::string("abc"));
  EXPECT_EQ(azurite.blob_sha256("models", "a"), sha256_of("abc"));
}

}  // namespace
}  // namespace tensorstream::testing::azurite_fixture_test
