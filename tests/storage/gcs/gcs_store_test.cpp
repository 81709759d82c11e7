// GcsStore against the GCS fixture: metadata, ranged media downloads, paginated listings, JSON
// error bodies, bearer tokens from the default credentials, retries, emulators and anonymous
// access.

#include "tensorstream/storage/gcs_store.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <memory>
#include <span>

#include "storage/gcs_test_environment.hpp"
#include "storage/gcs/json_api.hpp"
#include "support/error_of.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/print_error_kind.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream {
namespace {

using gcs::testing::FixedToken;
using testing::GcsFixtureServer;
using testing::error_of;
using testing::random_bytes;

class GcsStoreTest : public gcs::testing::GcsEnvironmentTest {
 protected:
  GcsStoreTest() : google_({.service_account_public_key = key().public_key}) {
    google_.put("models", "llama/model.safetensors", content_);
  }

  // A store of bucket "models" on the fixture, with quick retries.
  std::unique_ptr<GcsStore> store(GcsOptions options) {
    HttpOptions http;
    http.max_retries = 4;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return std::make_unique<GcsStore>(io_.get_executor(), Url::parse("gs://models/"), http,
                                      std::move(options));
  }

  // A store using a token the fixture issued.
  std::unique_ptr<GcsStore> store() {
    return store({.endpoint = google_.endpoint(),
                  .token_provider = std::make_shared<FixedToken>(google_.issue_token())});
  }

  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return testing::run_task(io_, std::move(task));
  }

  std::string read(GcsStore& store, const std::string& key, std::uint64_t offset, std::size_t size) {
    return testing::read_string(io_, store, key, offset, size);
  }

  // The requests the fixture got for the storage API (not for tokens).
  std::vector<GcsFixtureServer::Request> storage_requests() const {
    std::vector<GcsFixtureServer::Request> storage;
    for (auto& request : google_.requests()) {
      if (request.target.starts_with("/storage/")) storage.push_back(request);
    }
    return storage;
  }

  const std::string content_ = random_bytes(300'000, 1);
  GcsFixtureServer google_;
  boost::asio::io_context io_;
};

TEST_F(GcsStoreTest, SizeAndRangesAreExactWithTheBearerToken) {
  auto gcs = store();
  EXPECT_EQ(gcs->url("/llama/model.safetensors"), "gs://models/llama/model.safetensors");
  EXPECT_EQ(run(gcs->size("/llama/model.safetensors")), content_.size());
  EXPECT_EQ(read(*gcs, "/llama/model.safetensors", 0, 10), content_.substr(0, 10));
  EXPECT_EQ(read(*gcs, "/llama/model.safetensors", 123'456, 100'000),
            content_.substr(123'456, 100'000));
  EXPECT_EQ(read(*gcs, "/llama/model.safetensors", content_.size() - 1, 1),
            content_.substr(content_.size() - 1));

  const auto requests = storage_requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].target,
            "/storage/v1/b/models/o/llama%2Fmodel.safetensors?fields=size%2Cgeneration");
  // size() pinned the generation the fixture gave the object's only upload.
  EXPECT_EQ(requests[1].target,
            "/storage/v1/b/models/o/llama%2Fmodel.safetensors?alt=media&ifGenerationMatch=1");
  EXPECT_EQ(requests[1].range, "bytes=0-9");
  EXPECT_EQ(requests[2].range, "bytes=123456-223455");
  for (const auto& request : requests) {
    EXPECT_EQ(request.authorization, "Bearer ya29.fixture-token-1");
  }
  EXPECT_EQ(gcs->stats().retries, 0u);
  EXPECT_EQ(gcs->stats().connections, 1u);
}

TEST_F(GcsStoreTest, NamesAreTakenLiterallyAndEncodedOnTheWire) {
  const std::string name = "odd names/a b+c?d#e%41 \xc3\xa9.bin";
  google_.put("models", name, "literal");
  auto gcs = store();
  EXPECT_EQ(read(*gcs, "/" + name, 0, 7), "literal");
  EXPECT_EQ(storage_requests().back().target,
            "/storage/v1/b/models/o/odd%20names%2Fa%20b%2Bc%3Fd%23e%2541%20%C3%A9.bin?alt=media");
}

TEST_F(GcsStoreTest, ListingFollowsPagesOneLevelOrRecursively) {
  google_.put("models", "llama/a.json", "{}");
  google_.put("models", "llama/b.safetensors", "bb");
  google_.put("models", "llama/sub/c.safetensors", "ccc");
  google_.put("models", "llama/sub/deeper/d.bin", "dddd");
  google_.put("models", "llama/z.txt", "zzzzz");
  google_.put("models", "llamas/not-under.bin", "x");
  auto gcs = store();

  const auto one_level = run(gcs->list("/llama/", ListDepth::one_level));
  std::vector<std::pair<std::string, std::uint64_t>> found;
  for (const auto& object : one_level) found.emplace_back(object.key, object.size);
  EXPECT_EQ(found, (std::vector<std::pair<std::string, std::uint64_t>>{
                       {"/llama/a.json", 2},
                       {"/llama/b.safetensors", 2},
                       {"/llama/model.safetensors", content_.size()},
                       {"/llama/z.txt", 5}}));
  // Five entries (four objects and the prefix "llama/sub/") at two per page.
  EXPECT_EQ(storage_requests().size(), 3u);

  const auto recursive = run(gcs->list("/llama/", ListDepth::recursive));
  found.clear();
  for (const auto& object : recursive) found.emplace_back(object.key, object.size);
  EXPECT_EQ(found, (std::vector<std::pair<std::string, std::uint64_t>>{
                       {"/llama/a.json", 2},
                       {"/llama/b.safetensors", 2},
                       {"/llama/model.safetensors", content_.size()},
                       {"/llama/sub/c.safetensors", 3},
                       {"/llama/sub/deeper/d.bin", 4},
                       {"/llama/z.txt", 5}}));
  const auto requests = storage_requests();
  EXPECT_EQ(requests.size(), 6u);
  EXPECT_EQ(requests[3].target,
            gcs::list_target("models", "llama/", false, std::nullopt));
  EXPECT_EQ(requests[4].target,
            gcs::list_target("models", "llama/", false, "after:llama/b.safetensors"));
}

TEST_F(GcsStoreTest, WholeBucketAndEmptyPrefixesList) {
  auto gcs = store();
  EXPECT_EQ(run(gcs->list("/", ListDepth::recursive)).size(), 1u);
  EXPECT_TRUE(run(gcs->list("/nothing/", ListDepth::one_level)).empty());
  EXPECT_EQ(error_of<InvalidArgument>([&] { run(gcs->list("/llama", ListDepth::one_level)); }),
            "gs://models/llama: GCS listing needs a prefix starting and ending with '/'");
}

TEST_F(GcsStoreTest, MissingObjectAndBucketAreNotFoundWithGcsMessages) {
  auto gcs = store();
  EXPECT_EQ(error_of<NotFoundError>([&] { run(gcs->size("/llama/absent.safetensors")); }),
            "gs://models/llama/absent.safetensors: No such object: "
            "models/llama/absent.safetensors (HTTP 404)");
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*gcs, "/absent", 0, 1); }),
            "gs://models/absent: No such object: models/absent (HTTP 404)");
  auto other = std::make_unique<GcsStore>(
      io_.get_executor(), Url::parse("gs://no-such-bucket/"), HttpOptions{},
      GcsOptions{.endpoint = google_.endpoint(),
                 .token_provider = std::make_shared<FixedToken>(google_.issue_token())});
  EXPECT_EQ(error_of<NotFoundError>([&] { run(other->list("/", ListDepth::one_level)); }),
            "gs://no-such-bucket/: The specified bucket does not exist. (HTTP 404)");
}

TEST_F(GcsStoreTest, WrongTokenFailsAtOnceWithoutRetries) {
  auto gcs = store({.endpoint = google_.endpoint(),
                    .token_provider = std::make_shared<FixedToken>("ya29.wrong")});
  try {
    run(gcs->size("/llama/model.safetensors"));
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "gs://models/llama/model.safetensors: Invalid Credentials (HTTP 401)");
    EXPECT_FALSE(error.transient());
    EXPECT_EQ(error.kind(), ErrorKind::access_denied);
  }
  EXPECT_EQ(storage_requests().size(), 1u);
  EXPECT_EQ(gcs->stats().retries, 0u);
}

TEST_F(GcsStoreTest, AnonymousRequestsReadPublicBucketsOnly) {
  auto gcs = store({.endpoint = google_.endpoint(), .anonymous = true});
  EXPECT_EQ(gcs->describe(), google_.endpoint() + " (without credentials)");
  EXPECT_EQ(error_of<StorageError>([&] { read(*gcs, "/llama/model.safetensors", 0, 4); }),
            "gs://models/llama/model.safetensors: Anonymous caller does not have "
            "storage.objects.get access to the Google Cloud Storage object. Permission "
            "'storage.objects.get' denied on resource (or it may not exist). (HTTP 401)");
  google_.make_public("models");
  EXPECT_EQ(read(*gcs, "/llama/model.safetensors", 0, 4), content_.substr(0, 4));
  for (const auto& request : storage_requests()) EXPECT_EQ(request.authorization, "");
}

TEST_F(GcsStoreTest, DefaultCredentialsGetOneTokenForManyConcurrentRequests) {
  set("GOOGLE_APPLICATION_CREDENTIALS",
      write("key.json", testing::service_account_key_file(
                            "loader@tensorstream-tests.iam.gserviceaccount.com",
                            key().private_key, google_.token_uri()))
          .string());
  auto gcs = store({.endpoint = google_.endpoint()});
  EXPECT_EQ(gcs->describe(),
            google_.endpoint() + " (credentials: application default credentials)");
  std::vector<std::string> parts(8, std::string(1000, '\0'));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    boost::asio::co_spawn(
        io_, gcs->read_range("/llama/model.safetensors", i * 1000,
                             std::as_writable_bytes(std::span(parts[i]))),
        [](std::exception_ptr error) { EXPECT_FALSE(error); });
  }
  io_.run();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i], content_.substr(i * 1000, 1000));
  }
  const auto requests = google_.requests();
  ASSERT_EQ(requests.size(), 9u);
  EXPECT_EQ(requests[0].target, "/token");
  for (std::size_t i = 1; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].authorization, "Bearer ya29.fixture-token-1");
  }
}

TEST_F(GcsStoreTest, NoCredentialsAnywhereIsACredentialsError) {
  auto gcs = store({.endpoint = google_.endpoint()});
  EXPECT_EQ(
      error_of<tensorstream::CredentialsError>([&] { run(gcs->size("/llama/model.safetensors")); }),
      "Google credentials from application default credentials: no source has credentials "
      "(GOOGLE_APPLICATION_CREDENTIALS: the variable is not set; gcloud application default "
      "credentials: " +
          (home() / ".config/gcloud/application_default_credentials.json").string() +
          " does not exist; GCE metadata server: turned off by NO_GCE_CHECK)");
  EXPECT_TRUE(storage_requests().empty());
}

TEST_F(GcsStoreTest, EmulatorHostIsUsedWithoutCredentials) {
  GcsFixtureServer emulator({.require_token = false});
  emulator.put("models", "m.bin", "emulated");
  for (const std::string& value : {emulator.host(), emulator.endpoint()}) {
    set("STORAGE_EMULATOR_HOST", value);
    auto gcs = store(GcsOptions{});
    EXPECT_EQ(gcs->describe(), emulator.endpoint() + " (without credentials)");
    EXPECT_EQ(read(*gcs, "/m.bin", 0, 8), "emulated");
  }
  for (const auto& request : emulator.requests()) EXPECT_EQ(request.authorization, "");
  EXPECT_EQ(emulator.requests().size(), 2u);
}

TEST_F(GcsStoreTest, ServerErrorsAreRetriedAndCounted) {
  GcsFixtureServer flaky({.fail_media_first = 2});
  flaky.put("models", "m.bin", content_);
  auto gcs = store({.endpoint = flaky.endpoint(),
                    .token_provider = std::make_shared<FixedToken>(flaky.issue_token())});
  EXPECT_EQ(read(*gcs, "/m.bin", 5, 50'000), content_.substr(5, 50'000));
  EXPECT_EQ(gcs->stats().retries, 2u);
  EXPECT_EQ(flaky.requests().size(), 3u);
}

TEST_F(GcsStoreTest, ServerErrorsThatPersistFailWithTheMessageAndTheAttempts) {
  GcsFixtureServer broken({.fail_media_first = 100, .fail_status = 503});
  broken.put("models", "m.bin", content_);
  auto gcs = store({.endpoint = broken.endpoint(),
                    .token_provider = std::make_shared<FixedToken>(broken.issue_token())});
  try {
    read(*gcs, "/m.bin", 0, 10);
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "gs://models/m.bin: We encountered an internal error. Please try again. (HTTP 503) "
              "(after 5 attempts)");
    EXPECT_TRUE(error.transient());
  }
}

TEST_F(GcsStoreTest, OpenStoreServesGsUrls) {
  set("STORAGE_EMULATOR_HOST", google_.host());
  boost::asio::io_context io;
  const auto opened = open_store(Url::parse("gs://models/llama/"), io.get_executor());
  ASSERT_NE(dynamic_cast<GcsStore*>(opened.get()), nullptr);
  EXPECT_EQ(opened->url("/llama/x"), "gs://models/llama/x");
  EXPECT_TRUE(opened->can_list());
}

TEST_F(GcsStoreTest, EndpointPathPrefixesEveryTarget) {
  auto gcs = store({.endpoint = google_.endpoint() + "/proxy/",
                    .token_provider = std::make_shared<FixedToken>(google_.issue_token())});
  EXPECT_EQ(gcs->describe(), google_.endpoint() + "/proxy (credentials: fixed token)");
  EXPECT_EQ(error_of<NotFoundError>([&] { run(gcs->size("/m.bin")); }),
            "gs://models/m.bin: Not Found (HTTP 404)");
  EXPECT_EQ(google_.requests().back().target,
            "/proxy/storage/v1/b/models/o/m.bin?fields=size%2Cgeneration");
}

TEST_F(GcsStoreTest, BadKeysAndEndpointsAreInvalidArguments) {
  auto gcs = store();
  EXPECT_EQ(error_of<InvalidArgument>([&] { run(gcs->size("llama/model.safetensors")); }),
            "gs://modelsllama/model.safetensors: GCS keys are paths starting with '/' and "
            "naming an object");
  EXPECT_EQ(error_of<InvalidArgument>([&] { store({.endpoint = "gs://example.com"}); }),
            "GcsOptions::endpoint gs://example.com: the JSON API endpoint must be http or https");
  set("STORAGE_EMULATOR_HOST", "localhost:notaport");
  EXPECT_EQ(error_of<InvalidArgument>([&] { store(GcsOptions{}); }),
            "STORAGE_EMULATOR_HOST: invalid URL 'http://localhost:notaport': bad port 'notaport'");
  EXPECT_EQ(error_of<InvalidArgument>([&] {
              GcsStore(io_.get_executor(), Url::parse("s3://models/"));
            }),
            "s3://models/: GcsStore serves gs:// URLs only");
}

}  // namespace
}  // namespace tensorstream
