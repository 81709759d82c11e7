// Objects that change while they are read: every store pins an object at its first access, and a
// later read of another version fails naming the object, whether it is driven directly or by a
// slow consumer of a stream. Local files, nginx (which honours If-Match), s3rver (which ignores
// it, so the ETag of the response gives the change away) and the GCS fixture (ifGenerationMatch).

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>

#include "storage/response_version.hpp"
#include "storage/s3rver_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/files.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/nginx_server.hpp"
#include "support/run_task.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/storage/http_store.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::write_file;
using testing::FaultProxy;
using testing::GcsFixtureServer;
using testing::NginxServer;
using testing::TempDir;
using testing::random_bytes;

constexpr std::string_view restart = "; restart the stream";
// 2020-01-01 00:00:00 UTC: files start out old, so that rewriting them changes their time even
// on file systems with coarse timestamps.
constexpr std::time_t old_time = 1577836800;

void make_old(const fs::path& path) {
  const timespec times[2] = {{old_time, 0}, {old_time, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// Writes `bytes` over the start of the existing file, as an editor or a copy tool writing in
// place does: same inode, new modification time.
void overwrite_in_place(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

// Replaces the file with `bytes` the way deployments publish a new version: written beside it,
// then renamed over it. A response already being sent keeps reading the old file.
void replace_by_rename(const fs::path& path, const std::string& bytes) {
  const fs::path next = path.string() + ".next";
  write_file(next, bytes);
  fs::rename(next, path);
}

// The same checkpoint with every tensor byte inverted: an equally valid file of the same size.
std::string with_other_tensor_bytes(std::string file) {
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);
  for (std::size_t i = 8 + header_length; i < file.size(); ++i) file[i] = static_cast<char>(~file[i]);
  return file;
}

std::string md5_etag(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_md5(), nullptr);
  std::string hex = "\"";
  for (unsigned i = 0; i < length; ++i) {
    static constexpr char digits[] = "0123456789abcdef";
    hex += digits[digest[i] >> 4];
    hex += digits[digest[i] & 15];
  }
  return hex + "\"";
}

// The StorageError `action` throws.
template <class Action>
std::optional<StorageError> storage_error(Action action) {
  try {
    action();
  } catch (const StorageError& error) {
    return error;
  }
  return std::nullopt;
}

// A slow consumer: streams the tiny checkpoint at `url` and, holding its first tensor (so that
// the memory limit keeps most of the file unread), lets `change` replace the object with one of
// other tensor bytes. Every tensor the stream delivers must hold the bytes of the version it
// started with, and the stream must end in a permanent StorageError naming `object` and saying
// it changed.
void expect_stream_stops_at_the_change(const std::string& url, StreamerOptions options,
                                       const std::function<void()>& change,
                                       const std::string& object) {
  options.chunk_size = 64 * 1024;
  options.max_concurrency = 4;
  options.memory_limit = 1 << 20;
  RawStreamer streamer(url, options);
  int delivered = 0;
  const auto check = [&](const StreamedTensor& tensor) {
    const auto expected = synthetic_bytes(tensor.info.name, 0, tensor.info.byte_size());
    ASSERT_EQ(tensor.bytes().size(), expected.size());
    EXPECT_EQ(std::memcmp(tensor.bytes().data(), expected.data(), expected.size()), 0)
        << "bytes of the new version in " << tensor.info.name;
    ++delivered;
  };
  auto first = streamer.next_blocking();
  ASSERT_TRUE(first);
  check(*first);
  change();
  const auto error = storage_error([&] {
    while (auto tensor = streamer.next_blocking()) check(*tensor);
  });
  ASSERT_TRUE(error) << "the stream ended after " << delivered
                     << " tensors without noticing the change";
  EXPECT_EQ(error->object(), object);
  EXPECT_NE(error->cause().find("changed while it was being read"), std::string::npos)
      << error->what();
  EXPECT_TRUE(error->cause().ends_with(restart)) << error->what();
  EXPECT_FALSE(error->transient());
}

TEST(ResponseVersion, ConditionsHoldTheReadToThePinnedVersion) {
  EXPECT_EQ(version_conditions({.etag = "\"a\"", .last_modified = "Tue, 01 Dec 2026 05:00:00 GMT"}),
            "If-Match: \"a\"\r\n");
  // A weak ETag never matches If-Match; the date stands in.
  EXPECT_EQ(version_conditions({.etag = "W/\"a\"", .last_modified = "Tue, 01 Dec 2026 05:00:00 GMT"}),
            "If-Unmodified-Since: Tue, 01 Dec 2026 05:00:00 GMT\r\n");
  EXPECT_EQ(version_conditions({.etag = "W/\"a\""}), "");
  // GCS asks for ifGenerationMatch in the query instead.
  EXPECT_EQ(version_conditions({.generation = "7"}), "");
  EXPECT_EQ(version_conditions({}), "");
}

TEST(ResponseVersion, ChangesAreJudgedByTheStrongestIdentityBothName) {
  EXPECT_EQ(version_change({.etag = "\"a\""}, {.etag = "\"b\""}),
            "the object changed while it was being read (ETag \"a\" became \"b\"); restart the "
            "stream");
  EXPECT_EQ(version_change({.generation = "7"}, {.generation = "8"}),
            "the object changed while it was being read (generation 7 became 8); restart the "
            "stream");
  EXPECT_EQ(version_change({.etag = "\"a\"", .last_modified = "Mon"}, {.last_modified = "Tue"}),
            "the object changed while it was being read (Last-Modified Mon became Tue); restart "
            "the stream");
  EXPECT_EQ(version_change({.etag = "\"a\"", .last_modified = "Mon"}, {.etag = "\"a\"", .last_modified = "Tue"}),
            std::nullopt);
  EXPECT_EQ(version_change({.etag = "W/\"a\""}, {.etag = "\"a\""}), std::nullopt);
  EXPECT_EQ(version_change({.etag = "\"a\""}, {}), std::nullopt);
  EXPECT_EQ(version_change({.generation = "7"}, {.etag = "\"b\""}), std::nullopt);
}

class ObjectChange : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(model_.path(), {.preset = "tiny"});
    checkpoint_ = model_.path() / "model.safetensors";
    make_old(checkpoint_);
  }

  std::unique_ptr<ObjectStore> open_files() { return std::make_unique<FileStore>(io_.get_executor()); }

  std::string read(ObjectStore& store, const std::string& key, std::uint64_t offset,
                   std::size_t size) {
    return testing::read_string(io_, store, key, offset, size);
  }

  TempDir model_;
  fs::path checkpoint_;
  boost::asio::io_context io_;
};

TEST_F(ObjectChange, AFileRewrittenInPlaceBetweenReadsFailsNamingTheChange) {
  const fs::path path = model_.path() / "a.bin";
  const std::string old_bytes = random_bytes(100'000, 1);
  write_file(path, old_bytes);
  make_old(path);
  auto store = open_files();
  EXPECT_EQ(read(*store, path.string(), 0, 10), old_bytes.substr(0, 10));
  overwrite_in_place(path, random_bytes(100'000, 2));
  const auto error = storage_error([&] { read(*store, path.string(), 10, 10); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->object(), path.string());
  EXPECT_TRUE(error->cause().starts_with("the file changed while it was being read (modified "
                                         "2020-01-01 00:00:00.000000000 UTC became "))
      << error->what();
  EXPECT_TRUE(error->cause().ends_with(restart)) << error->what();
  EXPECT_FALSE(error->transient());
}

TEST_F(ObjectChange, AFileTruncatedOrReplacedAfterSizeFailsNamingTheChange) {
  const fs::path path = model_.path() / "a.bin";
  write_file(path, random_bytes(100'000, 1));
  make_old(path);
  auto store = open_files();
  EXPECT_EQ(testing::run_task(io_, store->size(path.string())), 100'000u);
  fs::resize_file(path, 50'000);
  auto error = storage_error([&] { read(*store, path.string(), 60'000, 10); });
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->cause().starts_with(
      "the file changed while it was being read (size 100000 became 50000 bytes, modified "))
      << error->what();

  auto other = open_files();
  write_file(path, random_bytes(100'000, 1));
  make_old(path);
  EXPECT_EQ(testing::run_task(io_, other->size(path.string())), 100'000u);
  const fs::path replacement = model_.path() / "b.bin";
  write_file(replacement, random_bytes(100'000, 1));
  make_old(replacement);
  fs::rename(replacement, path);
  error = storage_error([&] { read(*other, path.string(), 0, 10); });
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->cause().starts_with(
      "the file changed while it was being read (replaced by another file: inode "))
      << error->what();
}

// stat() names the version a store pinned, so that callers (the members of a distributed stream)
// can tell whether they read the same one; after a read it asks nothing more.
TEST_F(ObjectChange, StatNamesTheFilesPinnedVersion) {
  const fs::path path = model_.path() / "a.bin";
  write_file(path, random_bytes(100'000, 1));
  make_old(path);
  auto store = open_files();
  const ObjectStat first = testing::run_task(io_, store->stat(path.string()));
  EXPECT_EQ(first.size, 100'000u);
  struct stat status {};
  ASSERT_EQ(::stat(path.c_str(), &status), 0);
  EXPECT_EQ(first.version.describe(),
            "inode " + std::to_string(status.st_ino) + " of device " +
                std::to_string(status.st_dev) +
                ", 100000 bytes, modified 2020-01-01 00:00:00.000000000 UTC");
  overwrite_in_place(path, random_bytes(100'000, 2));
  EXPECT_EQ(testing::run_task(io_, store->stat(path.string())).version, first.version)
      << "the store keeps the version it pinned";
  EXPECT_NE(testing::run_task(io_, open_files()->stat(path.string())).version, first.version);
}

TEST_F(ObjectChange, ALocalStreamStopsAtTheChangeWithoutMixingVersions) {
  const std::string replacement = with_other_tensor_bytes(read_file(checkpoint_));
  expect_stream_stops_at_the_change(
      checkpoint_.string(), {}, [&] { overwrite_in_place(checkpoint_, replacement); },
      checkpoint_.string());
}

class ObjectChangeOverHttp : public ObjectChange {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) GTEST_SKIP() << "nginx is not installed";
    ObjectChange::SetUp();
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{.root = model_.path()});
  }

  std::unique_ptr<NginxServer> nginx_;
};

TEST_F(ObjectChangeOverHttp, NginxAnswersTheIfMatchOfTheNextReadWith412) {
  const std::string old_bytes = read_file(checkpoint_);
  HttpStore store(io_.get_executor(), Url::parse(nginx_->base_url()));
  EXPECT_EQ(read(store, "/model.safetensors", 0, 10), old_bytes.substr(0, 10));
  overwrite_in_place(checkpoint_, with_other_tensor_bytes(old_bytes));
  const auto error = storage_error([&] { read(store, "/model.safetensors", 10, 10); });
  ASSERT_TRUE(error);
  // nginx's ETag is the modification time and the size, in hex.
  char etag[64];
  std::snprintf(etag, sizeof etag, "\"%lx-%zx\"", static_cast<long>(old_time), old_bytes.size());
  EXPECT_EQ(std::string(error->what()),
            nginx_->base_url() + "/model.safetensors: the object changed while it was being read (ETag " +
                etag + " is no longer current: HTTP 412 Precondition Failed); restart the stream");
  EXPECT_FALSE(error->transient());
}

// The first read of the object breaks off and the file changes before the retry: the resumed
// body must come from the version the broken one did, so the retry carries If-Match too.
TEST_F(ObjectChangeOverHttp, StatNamesTheETagOfTheFirstReadWithoutAnotherRequest) {
  HttpStore store(io_.get_executor(), Url::parse(nginx_->base_url()));
  read(store, "/model.safetensors", 0, 10);
  const std::uint64_t requests = store.stats().requests;
  const ObjectStat stat = testing::run_task(io_, store.stat("/model.safetensors"));
  EXPECT_EQ(store.stats().requests, requests);
  EXPECT_EQ(stat.size, fs::file_size(checkpoint_));
  EXPECT_TRUE(stat.version.describe().starts_with("ETag \"")) << stat.version.describe();

  HttpStore fresh(io_.get_executor(), Url::parse(nginx_->base_url()));
  EXPECT_EQ(testing::run_task(io_, fresh.stat("/model.safetensors")).version, stat.version);
  EXPECT_EQ(fresh.stats().requests, 1u) << "one HEAD";
}

TEST_F(ObjectChangeOverHttp, ARetryAfterABrokenBodyResumesOnlyTheSameVersion) {
  const std::string old_bytes = read_file(checkpoint_);
  FaultProxy proxy(nginx_->port(), {.truncate_first = 1,
                                    .cut_after = 1000,
                                    .before_read = [&](int read) {
                                      if (read == 1) {
                                        overwrite_in_place(checkpoint_,
                                                           with_other_tensor_bytes(old_bytes));
                                      }
                                    }});
  HttpOptions quick;
  quick.retry_base_delay = std::chrono::milliseconds(1);
  HttpStore store(io_.get_executor(), Url::parse(proxy.endpoint()), quick);
  const auto error = storage_error([&] { read(store, "/model.safetensors", 0, old_bytes.size()); });
  ASSERT_TRUE(error);
  EXPECT_EQ(proxy.reads(), 2);
  char etag[64];
  std::snprintf(etag, sizeof etag, "\"%lx-%zx\"", static_cast<long>(old_time), old_bytes.size());
  EXPECT_EQ(error->cause(), "the object changed while it was being read (ETag " +
                                std::string(etag) +
                                " is no longer current: HTTP 412 Precondition Failed); restart "
                                "the stream");
}

// Over HTTP the file is replaced, not overwritten in place: bytes written into a file while the
// server is sending a response from it reach that response under the ETag its header already
// carried, which no client can tell apart (see docs/object-stores.md). The next read is refused.
TEST_F(ObjectChangeOverHttp, AStreamStopsAtAReplacementWithoutMixingVersions) {
  const std::string replacement = with_other_tensor_bytes(read_file(checkpoint_));
  const std::string url = nginx_->base_url() + "/model.safetensors";
  expect_stream_stops_at_the_change(url, {}, [&] { replace_by_rename(checkpoint_, replacement); },
                                    url);
}

class ObjectChangeOverS3 : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    generate_synthetic_model(model_.path(), {.preset = "tiny"});
    checkpoint_ = model_.path() / "model.safetensors";
    s3rver_->put("models", "tiny/model.safetensors", checkpoint_);
  }

  // Uploads the checkpoint again with other tensor bytes.
  void replace() {
    write_file(replacement_.path() / "model.safetensors",
               with_other_tensor_bytes(read_file(checkpoint_)));
    s3rver_->put("models", "tiny/model.safetensors", replacement_.path() / "model.safetensors");
  }

  TempDir model_;
  TempDir replacement_;
  fs::path checkpoint_;
};

// s3rver ignores If-Match: the ETag of its answer shows the change.
TEST_F(ObjectChangeOverS3, AnObjectUploadedAgainBetweenReadsFailsNamingBothETags) {
  boost::asio::io_context io;
  auto store = open_store(Url::parse("s3://models/"), io.get_executor(), {});
  const std::string old_bytes = read_file(checkpoint_);
  EXPECT_EQ(testing::read_string(io, *store, "/tiny/model.safetensors", 0, 10),
            old_bytes.substr(0, 10));
  replace();
  const auto error = storage_error(
      [&] { testing::read_string(io, *store, "/tiny/model.safetensors", 10, 10); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()),
            "s3://models/tiny/model.safetensors: the object changed while it was being read (ETag " +
                md5_etag(old_bytes) + " became " +
                md5_etag(with_other_tensor_bytes(old_bytes)) + "); restart the stream");
  EXPECT_FALSE(error->transient());
}

TEST_F(ObjectChangeOverS3, StatNamesTheETag) {
  boost::asio::io_context io;
  auto store = open_store(Url::parse("s3://models/"), io.get_executor(), {});
  const ObjectStat stat = testing::run_task(io, store->stat("/tiny/model.safetensors"));
  EXPECT_EQ(stat.size, fs::file_size(checkpoint_));
  EXPECT_EQ(stat.version.describe(), "ETag " + md5_etag(read_file(checkpoint_)));
}

TEST_F(ObjectChangeOverS3, AStreamStopsAtTheChangeWithoutMixingVersions) {
  expect_stream_stops_at_the_change("s3://models/tiny/model.safetensors", {}, [&] { replace(); },
                                    "s3://models/tiny/model.safetensors");
}

class ObjectChangeOverGcs : public ::testing::Test {
 protected:
  ObjectChangeOverGcs() : google_({.require_token = false}) {
    generate_synthetic_model(model_.path(), {.preset = "tiny"});
    bytes_ = read_file(model_.path() / "model.safetensors");
    google_.put("models", "tiny/model.safetensors", bytes_);
  }

  StoreOptions options() const {
    StoreOptions options;
    options.gcs().endpoint = google_.endpoint();
    options.gcs().anonymous = true;
    return options;
  }

  void replace() { google_.put("models", "tiny/model.safetensors", with_other_tensor_bytes(bytes_)); }

  TempDir model_;
  std::string bytes_;
  GcsFixtureServer google_;
};

TEST_F(ObjectChangeOverGcs, ReadsAfterANewGenerationAreRefusedWith412) {
  // Pinned once by size() from the metadata, once by the first download's x-goog-generation.
  for (const bool size_first : {true, false}) {
    boost::asio::io_context io;
    auto store = open_store(Url::parse("gs://models/"), io.get_executor(), options());
    const std::string key = "/tiny/model.safetensors";
    if (size_first) {
      EXPECT_EQ(testing::run_task(io, store->size(key)), bytes_.size());
    }
    EXPECT_EQ(testing::read_string(io, *store, key, 0, 10), bytes_.substr(0, 10));
    const std::string generation = std::to_string(size_first ? 1 : 2);
    EXPECT_TRUE(google_.requests().back().target.ends_with("?alt=media&ifGenerationMatch=" +
                                                           generation) == size_first)
        << google_.requests().back().target;
    replace();
    const auto error = storage_error([&] { testing::read_string(io, *store, key, 10, 10); });
    ASSERT_TRUE(error);
    EXPECT_EQ(google_.requests().back().target,
              "/storage/v1/b/models/o/tiny%2Fmodel.safetensors?alt=media&ifGenerationMatch=" +
                  generation);
    EXPECT_EQ(std::string(error->what()),
              "gs://models/tiny/model.safetensors: the object changed while it was being read "
              "(generation " + generation +
                  " is no longer current: HTTP 412 Precondition Failed); restart the stream");
    EXPECT_FALSE(error->transient());
  }
}

TEST_F(ObjectChangeOverGcs, StatNamesTheGenerationWithoutAnotherRequest) {
  boost::asio::io_context io;
  auto store = open_store(Url::parse("gs://models/"), io.get_executor(), options());
  const std::string key = "/tiny/model.safetensors";
  EXPECT_EQ(testing::run_task(io, store->stat(key)).version.describe(), "generation 1");
  const std::size_t requests = google_.requests().size();
  const ObjectStat stat = testing::run_task(io, store->stat(key));
  EXPECT_EQ(stat.size, bytes_.size());
  EXPECT_EQ(stat.version.describe(), "generation 1");
  EXPECT_EQ(google_.requests().size(), requests);
}

TEST_F(ObjectChangeOverGcs, AStreamStopsAtTheChangeWithoutMixingVersions) {
  StreamerOptions streamer;
  streamer.store = options();
  expect_stream_stops_at_the_change("gs://models/tiny/model.safetensors", streamer,
                                    [&] { replace(); }, "gs://models/tiny/model.safetensors");
}

}  // namespace
}  // namespace tensorstream
