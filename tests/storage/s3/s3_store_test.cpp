// S3Store against a real S3 server (s3rver), with every signature re-verified by botocore.

#include "tensorstream/storage/s3_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "storage/s3_test_environment.hpp"
#include "support/error_of.hpp"
#include "support/certificates.hpp"
#include "support/print_error_kind.hpp"
#include "support/run_task.hpp"
#include "support/s3rver_server.hpp"
#include "support/signature_verifier.hpp"
#include "support/random_bytes.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3/cached_provider.hpp"

namespace tensorstream {
namespace {

using testing::S3rverServer;
using testing::SignatureVerifier;
using testing::TempDir;
using testing::error_of;
using testing::random_bytes;

class S3StoreTest : public s3::testing::AwsEnvironmentTest {
 protected:
  void SetUp() override {
    if (auto why = S3rverServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
    if (auto why = SignatureVerifier::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
    s3rver_ = std::make_unique<S3rverServer>(std::vector<std::string>{"models"});
    verifier_ = std::make_unique<SignatureVerifier>(
        s3rver_->port(), std::vector<std::pair<std::string, std::string>>{
                             {S3rverServer::access_key_id, S3rverServer::secret_access_key}});
    set("AWS_ACCESS_KEY_ID", S3rverServer::access_key_id);
    set("AWS_SECRET_ACCESS_KEY", S3rverServer::secret_access_key);
    set("AWS_ENDPOINT_URL", verifier_->endpoint());
  }

  void TearDown() override {
    if (verifier_) {
      EXPECT_EQ(verifier_->counts().rejected, expected_rejections_) << verifier_->log();
    }
  }

  // Uploads `content` as `key` of the bucket "models".
  void put(const std::string& key, const std::string& content) {
    const auto file = scratch_.path() / "upload";
    std::ofstream(file, std::ios::binary) << content;
    s3rver_->put("models", key, file);
  }

  S3Store store(S3Options options = {}) {
    HttpOptions http;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return S3Store(io_.get_executor(), Url::parse("s3://models/"), http, std::move(options));
  }

  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return testing::run_task(io_, std::move(task));
  }

  std::string read(S3Store& store, const std::string& key, std::uint64_t offset, std::size_t size) {
    return testing::read_string(io_, store, key, offset, size);
  }

  // The kind of the tensorstream::Error that `action` throws.
  ErrorKind kind_of(auto&& action) {
    try {
      action();
    } catch (const Error& error) {
      return error.kind();
    }
    return ErrorKind::other;
  }

  boost::asio::io_context io_;
  TempDir scratch_;
  std::unique_ptr<S3rverServer> s3rver_;
  std::unique_ptr<SignatureVerifier> verifier_;
  int expected_rejections_ = 0;
};

TEST_F(S3StoreTest, SignedRangeReadsGiveExactBytesOfKeysWithSpacesAndPlus) {
  const std::string content = random_bytes(300'000, 1);
  put("dir/a b+c=d.bin", content);
  auto s3 = store();
  EXPECT_EQ(run(s3.size("/dir/a b+c=d.bin")), content.size());
  EXPECT_EQ(read(s3, "/dir/a b+c=d.bin", 0, content.size()), content);
  EXPECT_EQ(read(s3, "/dir/a b+c=d.bin", 12345, 100), content.substr(12345, 100));
  EXPECT_EQ(s3.url("/dir/a b+c=d.bin"), "s3://models/dir/a b+c=d.bin");
  EXPECT_GE(verifier_->counts().verified, 3);
  EXPECT_EQ(verifier_->counts().unsigned_requests, 0);
}

TEST_F(S3StoreTest, SessionTokensAreSentAndSigned) {
  set("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEJr//////////session");
  put("t.bin", "token");
  auto s3 = store();
  EXPECT_EQ(read(s3, "/t.bin", 0, 5), "token");
  EXPECT_EQ(verifier_->counts().verified, 1);
}

TEST_F(S3StoreTest, ProfileCredentialsSign) {
  unset("AWS_ACCESS_KEY_ID");
  unset("AWS_SECRET_ACCESS_KEY");
  write(".aws/credentials",
        "[loader]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n");
  set("AWS_PROFILE", "loader");
  put("p.bin", "profile");
  auto s3 = store();
  EXPECT_EQ(read(s3, "/p.bin", 0, 7), "profile");
  EXPECT_EQ(verifier_->counts().verified, 1);
}

TEST_F(S3StoreTest, UnsignedRequestsCarryNoAuthorization) {
  put("public.bin", "public");
  auto s3 = store({.sign_requests = false});
  EXPECT_EQ(read(s3, "/public.bin", 0, 6), "public");
  EXPECT_EQ(verifier_->counts().unsigned_requests, 1);
  EXPECT_EQ(verifier_->counts().verified, 0);
}

TEST_F(S3StoreTest, WrongSecretFailsAtOnceWithSignatureDoesNotMatch) {
  set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  put("x.bin", "x");
  auto s3 = store();
  EXPECT_EQ(error_of<StorageError>([&] { read(s3, "/x.bin", 0, 1); }),
            "s3://models/x.bin: SignatureDoesNotMatch: The request signature we calculated does "
            "not match the signature you provided. Check your key and signing method. (HTTP 403)");
  EXPECT_EQ(s3.stats().retries, 0u);
  EXPECT_EQ(s3.stats().requests, 1u);
  EXPECT_EQ(kind_of([&] { read(s3, "/x.bin", 0, 1); }), ErrorKind::access_denied);
  expected_rejections_ = 2;
}

TEST_F(S3StoreTest, UnknownAccessKeyIdFailsAtOnce) {
  set("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN");
  put("x.bin", "x");
  auto s3 = store({.endpoint = s3rver_->endpoint()});
  EXPECT_EQ(error_of<StorageError>([&] { read(s3, "/x.bin", 0, 1); }),
            "s3://models/x.bin: InvalidAccessKeyId: The AWS Access Key Id you provided does not "
            "exist in our records. (HTTP 403)");
  EXPECT_EQ(s3.stats().retries, 0u);
  EXPECT_EQ(kind_of([&] { read(s3, "/x.bin", 0, 1); }), ErrorKind::access_denied);
}

TEST_F(S3StoreTest, MissingKeyIsNotFoundWithNoSuchKey) {
  auto s3 = store();
  EXPECT_EQ(error_of<NotFoundError>([&] { read(s3, "/absent.bin", 0, 4); }),
            "s3://models/absent.bin: NoSuchKey: The specified key does not exist. (HTTP 404)");
  // HEAD gets no error document; the store asks again with a GET to give S3's code.
  EXPECT_EQ(error_of<NotFoundError>([&] { run(s3.size("/absent.bin")); }),
            "s3://models/absent.bin: NoSuchKey: The specified key does not exist. (HTTP 404)");
  EXPECT_EQ(s3.stats().retries, 0u);
}

TEST_F(S3StoreTest, ASizeRefusedForCredentialsSaysWhy) {
  set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  put("x.bin", "x");
  auto s3 = store();
  EXPECT_EQ(error_of<StorageError>([&] { run(s3.size("/x.bin")); }),
            "s3://models/x.bin: SignatureDoesNotMatch: The request signature we calculated does "
            "not match the signature you provided. Check your key and signing method. (HTTP 403)");
  EXPECT_EQ(s3.stats().retries, 0u);
  EXPECT_EQ(s3.stats().requests, 2u) << "the HEAD, then one GET for the reason";
  expected_rejections_ = 2;
}

TEST_F(S3StoreTest, MissingBucketIsNotFoundWithNoSuchBucket) {
  HttpOptions http;
  S3Store s3(io_.get_executor(), Url::parse("s3://no-such-bucket/"), http, {});
  EXPECT_EQ(error_of<NotFoundError>([&] { run(s3.list("/", ListDepth::one_level)); }),
            "s3://no-such-bucket/: NoSuchBucket: The specified bucket does not exist (HTTP 404)");
  EXPECT_EQ(error_of<NotFoundError>([&] { run(s3.size("/x.bin")); }),
            "s3://no-such-bucket/x.bin: NoSuchBucket: The specified bucket does not exist "
            "(HTTP 404)");
}

TEST_F(S3StoreTest, ARangePastTheEndNamesTheObjectsSize) {
  put("short.bin", "12345");
  auto s3 = store();
  const auto message = error_of<StorageError>([&] { read(s3, "/short.bin", 3, 10); });
  EXPECT_NE(message.find("s3://models/short.bin: "), std::string::npos) << message;
  EXPECT_NE(message.find("5 bytes"), std::string::npos) << message;
}

TEST_F(S3StoreTest, ListingOneLevelAndRecursively) {
  put("m/config.json", "{}");
  put("m/model.safetensors", "abc");
  put("m/tokenizer/vocab.txt", "vocab");
  put("m/empty", "");
  put("other.txt", "o");
  auto s3 = store();
  std::vector<std::pair<std::string, std::uint64_t>> one_level, recursive;
  for (const auto& object : run(s3.list("/m/", ListDepth::one_level))) {
    one_level.emplace_back(object.key, object.size);
  }
  for (const auto& object : run(s3.list("/m/", ListDepth::recursive))) {
    recursive.emplace_back(object.key, object.size);
  }
  using Listing = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(one_level,
            (Listing{{"/m/config.json", 2}, {"/m/empty", 0}, {"/m/model.safetensors", 3}}));
  EXPECT_EQ(recursive, (Listing{{"/m/config.json", 2},
                                {"/m/empty", 0},
                                {"/m/model.safetensors", 3},
                                {"/m/tokenizer/vocab.txt", 5}}));
}

TEST_F(S3StoreTest, ListingFollowsContinuationTokensPastAThousandKeys) {
  s3rver_->put_many("models", "many/", 1003, "z");
  auto s3 = store();
  const auto objects = run(s3.list("/many/", ListDepth::one_level));
  ASSERT_EQ(objects.size(), 1003u);
  EXPECT_EQ(objects.front().key, "/many/obj-00000");
  EXPECT_EQ(objects.back().key, "/many/obj-01002");
  EXPECT_EQ(s3.stats().requests, 2u);
}

// Hands out credentials that expire within the refresh margin, so that every load refreshes
// them, each time with a new session token.
class ExpiringProvider : public s3::CredentialsProvider {
 public:
  std::string name() const override { return "expiring test credentials"; }
  boost::asio::awaitable<s3::Credentials> get() override {
    const int generation = ++loads_;
    co_return s3::Credentials{S3rverServer::access_key_id, S3rverServer::secret_access_key,
                              "session-" + std::to_string(generation),
                              std::chrono::system_clock::now() + std::chrono::minutes(1)};
  }
  int loads() const { return loads_; }

 private:
  std::atomic<int> loads_{0};
};

TEST_F(S3StoreTest, ExpiringCredentialsAreRefreshedBetweenRequestsOfOneStream) {
  const std::string content = random_bytes(50'000, 2);
  put("refresh.bin", content);
  const auto expiring = std::make_shared<ExpiringProvider>();
  // The cache refreshes credentials half way through a lifetime shorter than twice its margin,
  // not on every call: the clock jumps past each one's expiration between the reads instead.
  auto now = std::chrono::system_clock::now();
  auto s3 = store({.credentials = std::make_shared<s3::CachedProvider>(
                       expiring, std::chrono::minutes(5), [&now] { return now; })});
  for (std::uint64_t offset = 0; offset < content.size(); offset += 10'000) {
    EXPECT_EQ(read(s3, "/refresh.bin", offset, 10'000), content.substr(offset, 10'000));
    now += std::chrono::minutes(2);
  }
  EXPECT_EQ(expiring->loads(), 5);
  EXPECT_EQ(verifier_->counts().verified, 5);
}

TEST_F(S3StoreTest, AwsCaBundleIsTrustedForHttps) {
  if (!testing::Certificates::available()) TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
  const auto certificates = testing::Certificates::generate(scratch_.path());
  S3rverServer https_s3({"models"}, S3rverServer::Tls{certificates.server_certificate,
                                                      certificates.server_key});
  const auto file = scratch_.path() / "upload";
  std::ofstream(file, std::ios::binary) << "over tls";
  https_s3.put("models", "tls.bin", file);
  set("AWS_ENDPOINT_URL", https_s3.endpoint());

  set("AWS_CA_BUNDLE", certificates.ca.string());
  auto trusting = store();
  EXPECT_EQ(read(trusting, "/tls.bin", 0, 8), "over tls");

  set("AWS_CA_BUNDLE", certificates.other_ca.string());
  auto distrusting = store();
  const auto message = error_of<StorageError>([&] { read(distrusting, "/tls.bin", 0, 8); });
  EXPECT_NE(message.find("certificate verify failed"), std::string::npos) << message;
  EXPECT_EQ(distrusting.stats().retries, 0u);

  set("AWS_CA_BUNDLE", (scratch_.path() / "absent-ca.pem").string());
  const auto missing = error_of<InvalidArgument>([&] { store(); });
  EXPECT_NE(missing.find("absent-ca.pem"), std::string::npos) << missing;
}

}  // namespace
}  // namespace tensorstream
