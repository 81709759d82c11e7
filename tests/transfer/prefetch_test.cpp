#include "tensorstream/transfer/prefetch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using testing::read_file;
using testing::write_file;
using testing::files_under;
using testing::TempDir;
using Paths = std::vector<std::string>;

// A FileStore that also lists `extra` objects, counts the largest read, can fail the reads of
// one key from one offset on, as a network store failing mid-object would, and can hold the reads
// of one key until another key has been read to its end. Holding needs a one-thread executor.
class FakeStore final : public ObjectStore {
 public:
  explicit FakeStore(asio::any_io_executor executor)
      : inner_(executor), gate_(executor, asio::steady_timer::time_point::max()) {}

  std::vector<ObjectInfo> extra;
  std::string failing_key;
  std::uint64_t failing_from = 0;
  std::atomic<std::uint64_t> largest_read{0};
  std::string held_key;
  std::string awaited_key;
  std::uint64_t awaited_size = 0;

  std::string url(const std::string& key) const override { return "fake://" + key; }
  asio::awaitable<std::uint64_t> size(std::string key) override {
    return inner_.size(std::move(key));
  }
  bool can_list() const override { return true; }
  asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix, ListDepth depth) override {
    auto objects = co_await inner_.list(std::move(prefix), depth);
    objects.insert(objects.end(), extra.begin(), extra.end());
    std::sort(objects.begin(), objects.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    co_return objects;
  }
  asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                   std::span<std::byte> destination) override {
    std::uint64_t largest = largest_read.load();
    while (destination.size() > largest &&
           !largest_read.compare_exchange_weak(largest, destination.size())) {
    }
    if (key == failing_key && offset >= failing_from) {
      throw StorageError(url(key), "connection reset by peer", true);
    }
    while (key == held_key && awaited_read_ < awaited_size) {
      co_await gate_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    const bool awaited = key == awaited_key;
    co_await inner_.read_range(std::move(key), offset, destination);
    if (awaited && (awaited_read_ += destination.size()) == awaited_size) gate_.cancel();
  }
  StoreStats stats() const override { return inner_.stats(); }

 private:
  FileStore inner_;
  asio::steady_timer gate_;
  std::uint64_t awaited_read_ = 0;
};

class Prefetch : public ::testing::Test {
 protected:
  std::string remote() const { return remote_.path().string() + "/"; }
  fs::path local() const { return local_.path() / "model"; }

  // prefetch() from `store`, on the test's io_context; rethrows what it threw. The store's own
  // completion watcher keeps the context busy, so the run ends when prefetch() does.
  PrefetchResult run(ObjectStore& store, PrefetchOptions options = {}) {
    std::optional<PrefetchResult> result;
    std::exception_ptr error;
    asio::co_spawn(io_, prefetch(store, remote(), local(), options),
                   [&](std::exception_ptr failure, PrefetchResult copied) {
                     error = failure;
                     result = std::move(copied);
                     io_.stop();
                   });
    io_.run();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
  }

  asio::io_context io_;
  TempDir remote_;
  TempDir local_;
};

TEST_F(Prefetch, CopiesEveryArtifactButTheWeights) {
  generate_synthetic_model(remote_.path(), {.preset = "tiny", .shards = 2, .index = true});
  const auto result = prefetch_blocking(remote(), local());
  const Paths expected{"config.json", "generation_config.json", "model.safetensors.index.json",
                       "tokenizer.json"};
  EXPECT_EQ(result.files, expected);
  EXPECT_EQ(files_under(local()), expected);
  std::uint64_t bytes = 0;
  for (const auto& file : expected) {
    EXPECT_EQ(read_file(local() / file), read_file(remote_.path() / file)) << file;
    bytes += fs::file_size(remote_.path() / file);
  }
  EXPECT_EQ(result.bytes, bytes);
}

TEST_F(Prefetch, ExcludesSafetensorsInNestedDirectoriesToo) {
  write_file(remote_.path() / "config.json", "{}");
  write_file(remote_.path() / "model.safetensors", "weights");
  write_file(remote_.path() / "sub" / "deep" / "extra.safetensors", "more weights");
  write_file(remote_.path() / "sub" / "deep" / "tokenizer.model", "vocabulary");
  write_file(remote_.path() / "sub" / "notes.safetensors.txt", "not weights");
  const auto result = prefetch_blocking(remote(), local());
  const Paths expected{"config.json", "sub/deep/tokenizer.model", "sub/notes.safetensors.txt"};
  EXPECT_EQ(result.files, expected);
  EXPECT_EQ(files_under(local()), expected);
  EXPECT_EQ(read_file(local() / "sub" / "deep" / "tokenizer.model"), "vocabulary");
}

TEST_F(Prefetch, IncludingSafetensorsCopiesTheWeightsByteExact) {
  generate_synthetic_model(remote_.path(), {.preset = "tiny", .shards = 2});
  write_file(remote_.path() / "sub" / "extra.safetensors", "nested weights");
  const auto result = prefetch_blocking(remote(), local(),
                                        {.exclude_safetensors = false, .chunk_size = 64 * 1024});
  EXPECT_EQ(files_under(local()), files_under(remote_.path()));
  for (const auto& file : result.files) {
    EXPECT_EQ(read_file(local() / file), read_file(remote_.path() / file)) << file;
  }
}

TEST_F(Prefetch, LargeFilesAreCopiedInChunksNoLargerThanChunkSize) {
  std::string big(1'000'003, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 251);
  write_file(remote_.path() / "tokenizer.json", big);
  FakeStore store(io_.get_executor());
  run(store, {.max_concurrency = 2, .chunk_size = 64 * 1024});
  EXPECT_EQ(read_file(local() / "tokenizer.json"), big);
  EXPECT_EQ(store.largest_read.load(), 64u * 1024u);
}

TEST_F(Prefetch, ZeroByteFilesAreCopiedAndDirectoryPlaceholdersSkipped) {
  write_file(remote_.path() / "empty.txt", "");
  write_file(remote_.path() / "tokenizer" / "vocab.txt", "abc");
  FakeStore store(io_.get_executor());
  store.extra = {{remote() + "tokenizer/", 0}, {remote() + "placeholder/", 0}};
  const auto result = run(store);
  EXPECT_EQ(result.files, (Paths{"empty.txt", "tokenizer/vocab.txt"}));
  EXPECT_EQ(files_under(local()), (Paths{"empty.txt", "tokenizer/vocab.txt"}));
  EXPECT_EQ(fs::file_size(local() / "empty.txt"), 0u);
  EXPECT_FALSE(fs::exists(local() / "placeholder"));
}

TEST_F(Prefetch, AFailedCopyLeavesNoPartialFile) {
  write_file(remote_.path() / "config.json", "{}");
  write_file(remote_.path() / "tokenizer.json", std::string(300'000, 'x'));
  FakeStore store(io_.get_executor());
  store.failing_key = remote() + "tokenizer.json";
  store.failing_from = 100'000;
  try {
    run(store, {.max_concurrency = 1, .chunk_size = 100'000});
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "fake://" + remote() + "tokenizer.json: connection reset by peer");
  }
  EXPECT_EQ(files_under(local()), (Paths{"config.json"}));
}

TEST_F(Prefetch, AnExistingFileIsReplacedWhole) {
  write_file(remote_.path() / "config.json", "{\"new\":true}");
  write_file(local() / "config.json", "{\"old\":true, \"and\":\"longer than the new one\"}");
  prefetch_blocking(remote(), local());
  EXPECT_EQ(read_file(local() / "config.json"), "{\"new\":true}");
}

// A killed prefetch leaves `K.partial` behind, or a user uploads one. Here the copy of `K` is
// held until `K.partial` has been read whole (and so, on one thread, written and renamed into
// place): a temporary name that a key could also have is then overwritten under the copy of `K`.
TEST_F(Prefetch, AKeyNamedLikeATemporaryFileIsCopiedAsItselfBesideItsNamesake) {
  const std::string key_bytes(200'000, 'k');
  const std::string partial_bytes(150'000, 'p');
  write_file(remote_.path() / "tokenizer.json", key_bytes);
  write_file(remote_.path() / "tokenizer.json.partial", partial_bytes);
  FakeStore store(io_.get_executor());
  store.held_key = remote() + "tokenizer.json";
  store.awaited_key = remote() + "tokenizer.json.partial";
  store.awaited_size = partial_bytes.size();
  // Four reads for the four chunks of `K`, held, and one left to read `K.partial`.
  const auto result = run(store, {.max_concurrency = 5, .chunk_size = 64 * 1024});
  EXPECT_EQ(result.files, (Paths{"tokenizer.json", "tokenizer.json.partial"}));
  EXPECT_EQ(files_under(local()), (Paths{"tokenizer.json", "tokenizer.json.partial"}));
  EXPECT_EQ(read_file(local() / "tokenizer.json"), key_bytes);
  EXPECT_EQ(read_file(local() / "tokenizer.json.partial"), partial_bytes);
}

TEST_F(Prefetch, AKeyThatWouldLandOutsideTheDirectoryIsRefused) {
  write_file(remote_.path() / "config.json", "{}");
  FakeStore store(io_.get_executor());
  store.extra = {{remote() + "../escape.json", 2}};
  try {
    run(store);
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "fake://" + remote() + "../escape.json: cannot be copied into " + local().string() +
                  ": its key is not a plain relative path below fake://" + remote());
  }
  EXPECT_FALSE(fs::exists(local()));
}

TEST_F(Prefetch, ARemotePathWithoutTrailingSlashIsAPrefix) {
  write_file(remote_.path() / "config.json", "{}");
  const auto result = prefetch_blocking(remote_.path().string(), local());
  EXPECT_EQ(result.files, (Paths{"config.json"}));
}

TEST_F(Prefetch, IncludeAndExcludeChooseByThePathBelowThePrefix) {
  for (const char* name : {"config.json", "readme.md", "tokenizer/vocab.txt",
                           "tokenizer/merges.txt", "tokenizer/special.json"}) {
    write_file(remote_.path() / name, name);
  }
  const auto result = prefetch_blocking(
      remote(), local(), {.include = {"*.json", "tokenizer/v*"}, .exclude = {"*special*"}});
  EXPECT_EQ(result.files, (Paths{"config.json", "tokenizer/vocab.txt"}));
  EXPECT_EQ(files_under(local()), result.files);
}

TEST_F(Prefetch, PatternsThatTakeNothingAreNotFoundAndCreateNothing) {
  write_file(remote_.path() / "config.json", "{}");
  try {
    prefetch_blocking(remote(), local(), {.include = {"*.gguf"}, .exclude = {"x"}});
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              remote() + ": no object under this prefix matches --include '*.gguf' --exclude 'x'");
  }
  EXPECT_FALSE(fs::exists(local()));
  EXPECT_THROW(prefetch_blocking(remote(), local(), {.include = {""}}), InvalidArgument);
}

TEST_F(Prefetch, AMissingPrefixIsNotFound) {
  const auto missing = remote() + "absent/";
  try {
    prefetch_blocking(missing, local());
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()), missing + ": No such file or directory");
  }
}

// An HTTP server cannot list: the files a model directory holds by convention are asked for by
// name, and those that are there are copied, exactly as a listing would have found them.
TEST_F(Prefetch, FromHttpTheKnownArtifactsAreFetchedByName) {
  if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  generate_synthetic_model(remote_.path() / "tiny", {.preset = "tiny", .shards = 2, .index = true});
  testing::NginxServer nginx({.root = remote_.path()});
  const auto result = prefetch_blocking(nginx.base_url() + "/tiny/", local());
  const Paths expected{"config.json", "generation_config.json", "model.safetensors.index.json",
                       "tokenizer.json"};
  EXPECT_EQ(result.files, expected);
  EXPECT_EQ(files_under(local()), expected);
  for (const auto& file : expected) {
    EXPECT_EQ(read_file(local() / file), read_file(remote_.path() / "tiny" / file)) << file;
  }
  try {
    prefetch_blocking(nginx.base_url() + "/nothere/", local() / "none");
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              nginx.base_url() + "/nothere/: none of the files a model directory holds is there "
                                 "(this store cannot list; config.json, tokenizer.json, ... were "
                                 "asked for by name)");
  }
  EXPECT_FALSE(fs::exists(local() / "none"));
}

TEST_F(Prefetch, BadOptionsAreRejected) {
  try {
    prefetch_blocking(remote(), local(), {.max_concurrency = 0});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), "prefetch: max_concurrency must be at least 1");
  }
  try {
    prefetch_blocking(remote(), local(), {.chunk_size = 0});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), "prefetch: chunk_size must be at least 1 byte");
  }
}

TEST_F(Prefetch, TheCoroutineRunsOnACallersExecutorWithSeveralThreads) {
  generate_synthetic_model(remote_.path(), {.preset = "tiny", .index = true});
  for (int i = 0; i < 40; ++i) {
    write_file(remote_.path() / "many" / std::to_string(i), std::to_string(i));
  }
  auto future = asio::co_spawn(io_, prefetch(remote(), local(), {.max_concurrency = 16}),
                               asio::use_future);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([this] { io_.run(); });
  const auto result = future.get();
  io_.stop();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(result.files.size(), 44u);
  EXPECT_EQ(read_file(local() / "many" / "39"), "39");
}

}  // namespace
}  // namespace tensorstream
