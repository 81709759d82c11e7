// AzureStore against a real Blob service (Azurite, which checks Shared Key signatures and SAS
// tokens), seeded and checked through the Azure SDK for Python.

#include "tensorstream/storage/azure_store.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "storage/azurite_test.hpp"
#include "storage/builtin_schemes.hpp"
#include "storage/killed_writer.hpp"
#include "support/error_of.hpp"
#include "support/azurite_server.hpp"
#include "support/fault_proxy.hpp"
#include "support/logged_messages.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/sha256.hpp"
#include "support/skip.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/azure/default_credentials.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream::azure_store_tests {

using testing::AzuriteServer;
using testing::FaultProxy;
using testing::error_of;
using testing::random_bytes;
using Access = AzuriteServer::PublicAccess;

std::string digest(const std::string& bytes) {
  return testing::sha256_hex(std::as_bytes(std::span(bytes)));
}

class AzureStoreTest : public azure::testing::AzuriteTest {
 protected:
  static AzureOptions shared_key(std::string endpoint = "") {
    AzureOptions options;
    options.endpoint = endpoint.empty() ? azurite().blob_endpoint() : endpoint;
    options.credentials = azure::fixed_credentials(
        {azure::Credentials::Kind::shared_key, AzuriteServer::account_key}, "test key");
    return options;
  }

  AzureStore store(AzureOptions options, const std::string& container = "") {
    HttpOptions http;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    http.max_retries = 8;
    return AzureStore(io_.get_executor(),
                      Url::parse("az://" + (container.empty() ? container_ : container) + "/"),
                      http, std::move(options));
  }

  std::string read(ObjectStore& store, const std::string& key, std::uint64_t offset,
                   std::size_t size) {
    return testing::read_string(io_, store, key, offset, size);
  }

  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return testing::run_task(io_, std::move(task));
  }

  // Writes `content` as `key` in pieces of at most `piece` bytes and commits.
  void write(AzureStore& store, const std::string& key, const std::string& content,
             WriteOptions options = {}, std::size_t piece = 1 << 20) {
    auto writer = store.create_writer(key, options);
    for (std::size_t at = 0; at < content.size() || (at == 0 && content.empty()); at += piece) {
      const auto bytes = std::as_bytes(std::span(content).subspan(at, std::min(piece, content.size() - at)));
      run(writer->write(bytes));
      if (content.empty()) break;
    }
    run(writer->commit());
  }

  boost::asio::io_context io_;
  const std::string& container_ = container();
};

TEST_F(AzureStoreTest, SharedKeySignedRangeReadsGiveExactBytesOfNamesWithSpacesAndPlus) {
  const std::string content = random_bytes(300'000, 1);
  azurite().put_blob(container_, "dir/a b+c=d.bin", content);
  auto azure = store(shared_key());
  EXPECT_EQ(run(azure.size("/dir/a b+c=d.bin")), content.size());
  EXPECT_EQ(read(azure, "/dir/a b+c=d.bin", 0, content.size()), content);
  EXPECT_EQ(read(azure, "/dir/a b+c=d.bin", 12345, 100), content.substr(12345, 100));
  EXPECT_EQ(azure.url("/dir/a b+c=d.bin"), "az://" + container_ + "/dir/a b+c=d.bin");
}

TEST_F(AzureStoreTest, TheConnectionStringGivesEndpointAccountAndKey) {
  azurite().put_blob(container_, "m.bin", std::string("connected"));
  set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  auto azure = store({});
  EXPECT_EQ(read(azure, "/m.bin", 0, 9), "connected");
  EXPECT_NE(azure.describe().find("credentials: credential chain"), std::string::npos)
      << azure.describe();
  EXPECT_NE(azure.describe().find("account devstoreaccount1"), std::string::npos);
}

TEST_F(AzureStoreTest, AzureStorageKeySignsForTheAccountOfTheEndpoint) {
  azurite().put_blob(container_, "m.bin", std::string("keyed"));
  set("AZURE_STORAGE_KEY", AzuriteServer::account_key);
  AzureOptions options;
  options.endpoint = azurite().blob_endpoint();
  auto azure = store(options);
  EXPECT_EQ(read(azure, "/m.bin", 0, 5), "keyed");
}

TEST_F(AzureStoreTest, AccountAndContainerSasTokensReadAndAreKeptOutOfTraces) {
  azurite().put_blob(container_, "m.bin", std::string("signed access"));
  AzureOptions options;
  options.endpoint = azurite().blob_endpoint();
  for (const std::string& sas :
       {azurite().account_sas("rl"), "?" + azurite().container_sas(container_, "rl")}) {
    set("AZURE_STORAGE_SAS_TOKEN", sas);
    testing::LoggedMessages traces(LogLevel::trace);
    auto azure = store(options);
    EXPECT_EQ(read(azure, "/m.bin", 0, 13), "signed access");
    const auto listed = run(azure.list("/", ListDepth::recursive));
    ASSERT_EQ(listed.size(), 1u);
    bool traced_id = false;
    for (const auto& message : traces.messages()) {
      EXPECT_EQ(message.find("sig="), std::string::npos) << message;
      traced_id = traced_id || message.find("x-ms-client-request-id ") != std::string::npos;
    }
    EXPECT_TRUE(traced_id);
  }
}

TEST_F(AzureStoreTest, ASasConnectionStringReads) {
  azurite().put_blob(container_, "m.bin", std::string("sas string"));
  set("AZURE_STORAGE_CONNECTION_STRING",
      "BlobEndpoint=" + azurite().blob_endpoint() +
          ";SharedAccessSignature=" + azurite().account_sas("rl"));
  auto azure = store({});
  EXPECT_EQ(read(azure, "/m.bin", 0, 10), "sas string");
}

TEST_F(AzureStoreTest, AReadOnlySasCannotWriteAndSaysWhy) {
  set("AZURE_STORAGE_SAS_TOKEN", azurite().container_sas(container_, "rl"));
  AzureOptions options;
  options.endpoint = azurite().blob_endpoint();
  auto azure = store(options);
  const std::string error = error_of<StorageError>([&] { write(azure, "/w.bin", "x"); });
  EXPECT_NE(error.find("az://" + container_ + "/w.bin: AuthorizationPermissionMismatch"),
            std::string::npos)
      << error;
  EXPECT_EQ(azurite().blob_sha256(container_, "w.bin"), std::nullopt);
}

TEST_F(AzureStoreTest, PublicContainersReadWithoutCredentialsPrivateOnesSayNo) {
  const std::string open = container_ + "-public";
  azurite().create_container(open, Access::container);
  azurite().put_blob(open, "m.bin", std::string("public"));
  azurite().put_blob(container_, "m.bin", std::string("private"));
  AzureOptions options;
  options.endpoint = azurite().blob_endpoint();
  options.anonymous = true;
  auto public_store = store(options, open);
  EXPECT_EQ(read(public_store, "/m.bin", 0, 6), "public");
  EXPECT_EQ(run(public_store.list("/", ListDepth::recursive)).size(), 1u);
  auto private_store = store(options);
  const std::string error =
      error_of<Error>([&] { read(private_store, "/m.bin", 0, 7); });
  EXPECT_NE(error.find("az://" + container_ + "/m.bin: "), std::string::npos) << error;
  EXPECT_NE(error.find("(HTTP 40"), std::string::npos) << error;
}

TEST_F(AzureStoreTest, AWrongKeyFailsAtOnceWithTheServicesMessage) {
  azurite().put_blob(container_, "m.bin", std::string("x"));
  AzureOptions options = shared_key();
  options.credentials = azure::fixed_credentials(
      {azure::Credentials::Kind::shared_key, "d3Jvbmcga2V5IGJ1dCBiYXNlNjQ="}, "test key");
  auto azure = store(options);
  const std::string error = error_of<StorageError>([&] { read(azure, "/m.bin", 0, 1); });
  // Azure says AuthenticationFailed, Azurite AuthorizationFailure; both explain it so.
  EXPECT_NE(error.find("az://" + container_ + "/m.bin: "), std::string::npos) << error;
  EXPECT_NE(error.find("Server failed to authenticate the request"), std::string::npos) << error;
  EXPECT_EQ(error.find("attempts"), std::string::npos) << error;
  EXPECT_EQ(azure.stats().retries, 0u);
  options.credentials = azure::fixed_credentials(
      {azure::Credentials::Kind::shared_key, "not base64!"}, "test key");
  auto broken = store(options);
  EXPECT_EQ(error_of<CredentialsError>([&] { read(broken, "/m.bin", 0, 1); }),
            "Azure credentials from test key: the account key is not base64");
}

TEST_F(AzureStoreTest, MissingBlobsAndContainersAreNotFound) {
  auto azure = store(shared_key());
  const std::string blob = error_of<NotFoundError>([&] { read(azure, "/none.bin", 0, 1); });
  EXPECT_NE(blob.find("az://" + container_ + "/none.bin: BlobNotFound"), std::string::npos)
      << blob;
  EXPECT_NE(error_of<NotFoundError>([&] { run(azure.size("/none.bin")); }), "no error");
  auto nowhere = store(shared_key(), "no-such-container");
  const std::string listing =
      error_of<NotFoundError>([&] { run(nowhere.list("/", ListDepth::recursive)); });
  EXPECT_NE(listing.find("ContainerNotFound"), std::string::npos) << listing;
}

TEST_F(AzureStoreTest, ListingsFollowMarkersAcrossPagesAndGroupPrefixes) {
  for (const std::string name : {"a/1.bin", "a/2.bin", "a/b/3.bin", "a/c/4.bin", "z.bin"}) {
    azurite().put_blob(container_, name, name);
  }
  AzureOptions options = shared_key();
  options.list_page_size = 2;
  auto azure = store(options);
  const auto all = run(azure.list("/", ListDepth::recursive));
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].key, "/a/1.bin");
  EXPECT_EQ(all[2].key, "/a/b/3.bin");
  EXPECT_EQ(all[2].size, 9u);
  EXPECT_EQ(all[4].key, "/z.bin");
  const Listing level = run(azure.list_level("/a/"));
  ASSERT_EQ(level.objects.size(), 2u);
  EXPECT_EQ(level.prefixes, (std::vector<std::string>{"/a/b/", "/a/c/"}));
}

TEST_F(AzureStoreTest, ABlobRewrittenMidStreamIsAClearError) {
  azurite().put_blob(container_, "m.bin", random_bytes(1000, 2));
  auto azure = store(shared_key());
  EXPECT_EQ(run(azure.size("/m.bin")), 1000u);
  azurite().put_blob(container_, "m.bin", random_bytes(1000, 3));
  const std::string error = error_of<StorageError>([&] { read(azure, "/m.bin", 0, 10); });
  EXPECT_NE(error.find("changed"), std::string::npos) << error;
}

TEST_F(AzureStoreTest, SmallBlobsGoUpAsOnePutThroughFaultsAndAreExact) {
  // Each blob's first Put Blob is answered 503, its second reset (after its first byte, if any).
  for (const auto& [name, content] : std::vector<std::pair<std::string, std::string>>{
           {"one.bin", "!"}, {"four.bin", random_bytes(4 << 20, 4)}, {"empty.bin", ""}}) {
    SCOPED_TRACE(name);
    FaultProxy proxy(azurite().port(),
                     {.upload_fail_first = 1, .upload_reset_first = 1, .upload_cut_after = 1});
    auto azure = store(shared_key(proxy.endpoint() + "/" + AzuriteServer::account_name));
    write(azure, "/" + name, content);
    EXPECT_EQ(azurite().blob_sha256(container_, name), digest(content));
    EXPECT_EQ(proxy.uploads(), 3);
  }
}

TEST_F(AzureStoreTest, LargeBlobsGoUpAsBlocksThroughFaultsAndAreExact) {
  const std::string content = random_bytes(300 << 20, 5);
  FaultProxy proxy(azurite().port(), {.upload_fail_first = 2,
                                      .upload_reset_first = 2,
                                      .upload_cut_after = 1 << 20});
  auto azure = store(shared_key(proxy.endpoint() + "/" + AzuriteServer::account_name));
  WriteOptions options;
  options.part_size = 16 << 20;
  options.max_parts_in_flight = 4;
  write(azure, "/big.bin", content, options, 7 << 20);
  EXPECT_EQ(azurite().blob_sha256(container_, "big.bin"), digest(content));
  EXPECT_GE(proxy.uploads(), 300 / 16 + 1 + 4);
  EXPECT_LE(proxy.max_uploads_in_flight(), 4);
}

TEST_F(AzureStoreTest, AnAbortedOrKilledUploadLeavesNoBlob) {
  auto azure = store(shared_key());
  WriteOptions options;
  options.single_put_limit = 5 << 20;
  options.part_size = 5 << 20;
  const std::string content = random_bytes(12 << 20, 6);
  {
    auto writer = azure.create_writer("/aborted.bin", options);
    run(writer->write(std::as_bytes(std::span(content))));
    run(writer->abort());
  }
  testing::kill_writer_midway([&](const std::function<void()>& reached) {
    boost::asio::io_context io;
    AzureStore child(io.get_executor(), Url::parse("az://" + container_ + "/"), {}, shared_key());
    auto writer = child.create_writer("/killed.bin", options);
    testing::run_task(io, writer->write(std::as_bytes(std::span(content))));
    reached();
  });
  EXPECT_EQ(azurite().blob_sha256(container_, "aborted.bin"), std::nullopt);
  EXPECT_EQ(azurite().blob_sha256(container_, "killed.bin"), std::nullopt);
  EXPECT_TRUE(azurite().list_blobs(container_).empty());
}

TEST_F(AzureStoreTest, ReadsStayExactUnderTwentyPercentFaults) {
  const std::string content = random_bytes(4 << 20, 7);
  azurite().put_blob(container_, "soak.bin", content);
  for (int round = 0; round < 10; ++round) {
    FaultProxy proxy(azurite().port(),
                     {.mix_rate = 0.2, .stall_for = std::chrono::milliseconds(300),
                      .seed = static_cast<std::uint64_t>(round + 1)});
    HttpOptions http;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    http.max_retries = 10;
    http.response_timeout = std::chrono::milliseconds(200);
    AzureStore azure(io_.get_executor(), Url::parse("az://" + container_ + "/"), http,
                     shared_key(proxy.endpoint() + "/" + AzuriteServer::account_name));
    std::string read_back;
    for (std::size_t at = 0; at < content.size(); at += 256 << 10) {
      read_back += read(azure, "/soak.bin", at, 256 << 10);
    }
    EXPECT_EQ(digest(read_back), digest(content)) << "round " << round;
  }
}

TEST_F(AzureStoreTest, BlobEndpointUrlsOpenAnAzureStoreWhoseKeysNameTheContainer) {
  azurite().put_blob(container_, "dir/a b.bin", std::string("endpoint"));
  StoreOptions options;
  options.azure() = shared_key();
  const std::string base = azurite().blob_endpoint() + "/" + container_;
  const Url blob = Url::parse(base + "/dir/a%20b.bin");
  auto store = open_store(blob, io_.get_executor(), options);
  ASSERT_NE(dynamic_cast<AzureStore*>(store.get()), nullptr);
  EXPECT_EQ(read(*store, blob.path, 0, 8), "endpoint");
  const std::string prefix = "/" + std::string(AzuriteServer::account_name) + "/" + container_ + "/dir/";
  const auto listed = run(store->list(prefix, ListDepth::recursive));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].key, blob.path);
  EXPECT_EQ(store->url(listed[0].key), base + "/dir/a%20b.bin");
  // Not under the endpoint the options name: plain HTTP.
  auto elsewhere = open_store(Url::parse("http://127.0.0.1:9/x/y.bin"), io_.get_executor(), options);
  EXPECT_EQ(dynamic_cast<AzureStore*>(elsewhere.get()), nullptr);
}

// An az:// URL names a container, not the account that holds it: a cache shared by two
// accounts' streams keeps their blobs apart by the identity.
TEST_F(AzureStoreTest, AnAzBlobsIdentityNamesTheAccountItsUrlLeavesOut) {
  auto here = store(shared_key());
  auto elsewhere = store(shared_key("http://127.0.0.1:9/otheraccount"));
  EXPECT_EQ(here.url("/m.bin"), elsewhere.url("/m.bin"));
  EXPECT_EQ(here.object_identity("/m.bin"), azurite().blob_endpoint() + "/" + container_ + "/m.bin");
  EXPECT_EQ(elsewhere.object_identity("/m.bin"),
            "http://127.0.0.1:9/otheraccount/" + container_ + "/m.bin");
}

TEST_F(AzureStoreTest, ASasUrlCarriesItsOwnCredentials) {
  azurite().put_blob(container_, "m.bin", std::string("sas url"));
  set("AZURE_STORAGE_CONNECTION_STRING",
      "BlobEndpoint=" + azurite().blob_endpoint() + ";AccountName=devstoreaccount1");
  const Url blob = Url::parse(azurite().blob_endpoint() + "/" + container_ + "/m.bin?" +
                              azurite().container_sas(container_, "r"));
  auto store = open_store(blob, io_.get_executor(), {});
  ASSERT_NE(dynamic_cast<AzureStore*>(store.get()), nullptr);
  EXPECT_NE(dynamic_cast<AzureStore&>(*store).describe().find("the URL's SAS token"),
            std::string::npos);
  EXPECT_EQ(read(*store, blob.path, 0, 7), "sas url");
}

TEST(AzureBlobUrls, PublicAndSovereignBlobHostsAreAzure) {
  const StoreOptions none;
  for (const std::string url :
       {"https://acct.blob.core.windows.net/c/m.safetensors",
        "https://acct.blob.core.usgovcloudapi.net/c/", "https://acct.blob.core.chinacloudapi.cn/c/x"}) {
    EXPECT_TRUE(is_azure_blob_url(Url::parse(url), none)) << url;
  }
  for (const std::string url : {"https://blob.core.windows.net.example.com/c/x",
                                "https://example.com/acct.blob.core.windows.net/x"}) {
    EXPECT_FALSE(is_azure_blob_url(Url::parse(url), none)) << url;
  }
}

// A runtime failure, as missing S3 or Google credentials are: the URL itself is well-formed.
TEST_F(AzureStoreTest, NoAccountAnywhereIsAStorageError) {
  const std::string error = error_of<StorageError>([&] { store({}); });
  EXPECT_NE(error.find("az://" + container_ + "/: no storage account"), std::string::npos)
      << error;
}

}  // namespace tensorstream::azure_store_tests
