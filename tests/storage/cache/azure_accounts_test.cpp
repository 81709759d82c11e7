// What the cache keeps of az:// blobs, whose URL names no storage account: two accounts' blobs of
// one container and name are two objects, and one object named by two URLs is one version.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "storage/azurite_test.hpp"
#include "support/azurite_server.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/azure/default_credentials.hpp"
#include "tensorstream/storage/azure_store.hpp"
#include "tensorstream/storage/cache_directory.hpp"
#include "tensorstream/storage/cached_store.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream::azure_accounts_cache_tests {

using testing::AzuriteServer;

// A second account of the suite's Azurite, with devstoreaccount1's key.
constexpr const char* second_account = "secondaccount";

class AzureAccountsCacheTest : public azure::testing::AzuriteTest {
 protected:
  static void SetUpTestSuite() { start({.more_accounts = {second_account}}); }

  // Options that sign with the key every account of the suite's Azurite has, for the account
  // whose blob endpoint (its path names the account) is `endpoint`.
  static AzureOptions shared_key(const std::string& endpoint) {
    AzureOptions options;
    options.endpoint = endpoint;
    options.credentials = azure::fixed_credentials(
        {azure::Credentials::Kind::shared_key, AzuriteServer::account_key}, "test key");
    return options;
  }

  // A store of az://CONTAINER/ (the test's container) of `account`.
  std::unique_ptr<ObjectStore> az_store(const std::string& account) {
    return std::make_unique<AzureStore>(io_.get_executor(),
                                        Url::parse("az://" + container() + "/"), HttpOptions{},
                                        shared_key(azurite().blob_endpoint(account)));
  }

  // The first `size` bytes of /m/model.bin as a store of `account`'s az://CONTAINER/ cached in
  // `mode` reads them.
  std::string read_cached(const std::string& account, CacheMode mode, std::size_t size) {
    ResolvedCache cache{.directory = cache_.path().string(), .mode = mode, .max_size = {}};
    CachedStore store(az_store(account), std::move(cache), io_.get_executor());
    return tensorstream::testing::read_string(io_, store, "/m/model.bin", 0, size);
  }

  boost::asio::io_context io_;
  tensorstream::testing::TempDir cache_;
};

TEST_F(AzureAccountsCacheTest, TwoAccountsBlobsOfOneContainerAndNameGetAnEntryEach) {
  // The same size, so that nothing but the account tells the entries apart.
  const std::string first = "the first account's weights";
  const std::string second = "the other account's weights";
  ASSERT_EQ(first.size(), second.size());
  azurite().create_container(container(), AzuriteServer::PublicAccess::none, second_account);
  azurite().put_blob(container(), "m/model.bin", first);
  azurite().put_blob(container(), "m/model.bin", second, second_account);

  EXPECT_EQ(read_cached(azurite().account(), CacheMode::readwrite, first.size()), first);
  EXPECT_EQ(read_cached(second_account, CacheMode::readwrite, second.size()), second);

  const auto entries = list_cache(cache_.path().string());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].url, "az://" + container() + "/m/model.bin");
  EXPECT_EQ(entries[1].url, entries[0].url);
  EXPECT_NE(entries[0].version, entries[1].version);
  EXPECT_NE(entries[0].directory, entries[1].directory);

  // Offline, each account's store finds its own entry.
  EXPECT_EQ(read_cached(azurite().account(), CacheMode::offline, first.size()), first);
  EXPECT_EQ(read_cached(second_account, CacheMode::offline, second.size()), second);
}

// az://CONTAINER/NAME with the account's endpoint and the endpoint's own URL of the blob name
// one object: its version and cache key are the same whichever URL a stream was given.
TEST_F(AzureAccountsCacheTest, TwoUrlsOfOneBlobGiveOneVersion) {
  azurite().put_blob(container(), "m/model.bin", std::string("weights"));
  const std::string address = azurite().blob_endpoint() + "/" + container() + "/m/model.bin";
  StoreOptions options;
  options.azure() = shared_key(azurite().blob_endpoint());
  const Url blob = Url::parse(address);
  auto by_address = open_store(blob, io_.get_executor(), options);
  ASSERT_NE(dynamic_cast<AzureStore*>(by_address.get()), nullptr);

  const ObjectStat named =
      tensorstream::testing::run_task(io_, az_store(azurite().account())->stat("/m/model.bin"));
  const ObjectStat addressed = tensorstream::testing::run_task(io_, by_address->stat(blob.path));
  EXPECT_EQ(named.version.kind(), ObjectVersion::Kind::etag);
  EXPECT_EQ(named.version.object(), address);
  EXPECT_EQ(named.version, addressed.version);
  EXPECT_EQ(named.version.cache_key(), addressed.version.cache_key());
}

}  // namespace tensorstream::azure_accounts_cache_tests
