// copy_objects(): exact bytes whatever an object's size against the chunk size, reads in
// parallel within and across objects but never more than asked, and a failure that leaves no
// partial object behind.

#include "tensorstream/transfer/copy_objects.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "support/files.hpp"
#include "support/memory_store.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using testing::MemoryObjects;
using testing::MemoryStore;
using testing::random_bytes;
using testing::read_file;
using testing::TempDir;

constexpr std::uint64_t chunk = 4096;

// A MemoryStore whose reads take a turn of the executor, so that reads started together are in
// flight together, counted, and one key's reads can fail from an offset on.
class CountingStore final : public ObjectStore {
 public:
  explicit CountingStore(std::shared_ptr<const MemoryObjects> objects)
      : inner_("bucket", std::move(objects)) {}

  std::string failing_key;
  std::uint64_t failing_from = 0;
  std::size_t in_flight = 0;
  std::size_t most_in_flight = 0;
  std::map<std::string, std::size_t> most_in_flight_per_key;
  std::uint64_t largest_read = 0;
  std::size_t reads = 0;

  std::string url(const std::string& key) const override { return inner_.url(key); }
  asio::awaitable<std::uint64_t> size(std::string key) override {
    return inner_.size(std::move(key));
  }
  asio::awaitable<ObjectStat> stat(std::string key) override {
    return inner_.stat(std::move(key));
  }
  bool can_list() const override { return true; }
  asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix, ListDepth depth) override {
    return inner_.list(std::move(prefix), depth);
  }
  asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                   std::span<std::byte> destination) override {
    ++reads;
    largest_read = std::max<std::uint64_t>(largest_read, destination.size());
    ++in_flight;
    most_in_flight = std::max(most_in_flight, in_flight);
    auto& per_key = key_in_flight_[key];
    ++per_key;
    most_in_flight_per_key[key] = std::max(most_in_flight_per_key[key], per_key);
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    --in_flight;
    --per_key;
    if (key == failing_key && offset >= failing_from) {
      throw StorageError(url(key), "connection reset by peer", true);
    }
    co_await inner_.read_range(std::move(key), offset, destination);
  }
  StoreStats stats() const override { return inner_.stats(); }

 private:
  MemoryStore inner_;
  std::map<std::string, std::size_t> key_in_flight_;
};

class CopyObjects : public ::testing::Test {
 protected:
  // The objects `sizes` gives, "/m/obj-0" ... with random bytes, and their copies into the
  // test's directory under the same names.
  void add_objects(const std::vector<std::uint64_t>& sizes) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::string name = "obj-" + std::to_string(i);
      (*objects_)["/m/" + name] = random_bytes(sizes[i], static_cast<unsigned>(i + 1));
      copies_.push_back({"/m/" + name, sizes[i], target(name)});
    }
  }

  std::string target(const std::string& name) const { return (directory_.path() / name).string(); }

  // copy_objects() on the test's io_context; rethrows what it threw. The file store's completion
  // watcher keeps the context busy, so the run ends when the copy does.
  void run(CopyOptions options) {
    FileStore files(io_.get_executor());
    std::exception_ptr error;
    asio::co_spawn(io_, copy_objects(source_, copies_, files, std::move(options)),
                   [&](std::exception_ptr failure) {
                     error = failure;
                     io_.stop();
                   });
    io_.restart();
    io_.run();
    if (error) std::rethrow_exception(error);
  }

  // The names in the test's directory, temporaries included.
  std::vector<std::string> names_in_directory() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory_.path())) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  asio::io_context io_;
  std::shared_ptr<MemoryObjects> objects_ = std::make_shared<MemoryObjects>();
  CountingStore source_{objects_};
  std::vector<ObjectCopy> copies_;
  TempDir directory_;
};

TEST_F(CopyObjects, EveryObjectArrivesByteExactWhateverItsSizeAgainstTheChunkSize) {
  // The first three objects each need a read, so that the three workers' first reads are in
  // flight together: an empty object first would send its worker to its write, which a file
  // store does on a thread of its own, for as long as that thread takes.
  add_objects({1, chunk - 1, chunk, 0, chunk + 1, 7 * chunk + 5});
  run({.max_concurrency = 3, .chunk_size = chunk});
  for (std::size_t i = 0; i < copies_.size(); ++i) {
    EXPECT_EQ(read_file(copies_[i].destination_key), objects_->at(copies_[i].key)) << i;
  }
  EXPECT_LE(source_.largest_read, chunk);
  EXPECT_EQ(source_.most_in_flight, 3u);
}

TEST_F(CopyObjects, ALargeObjectIsReadBySeveralRangesAtOnceButNoMoreThanTheConcurrency) {
  add_objects({16 * chunk});
  run({.max_concurrency = 4, .chunk_size = chunk});
  EXPECT_EQ(read_file(copies_[0].destination_key), objects_->at("/m/obj-0"));
  EXPECT_EQ(source_.most_in_flight_per_key.at("/m/obj-0"), 4u);
  EXPECT_EQ(source_.reads, 16u);
}

TEST_F(CopyObjects, ProgressCountsEveryByteAndEachObjectIsReportedOnceVisible) {
  add_objects({3 * chunk + 1, 0, chunk, 2 * chunk});
  std::vector<std::uint64_t> progress;
  std::vector<std::string> reported;
  run({.max_concurrency = 2,
       .chunk_size = chunk,
       .on_progress = [&](std::uint64_t bytes) { progress.push_back(bytes); },
       .on_object_copied = [&](const ObjectCopy& copy) {
         reported.push_back(copy.key);
         EXPECT_TRUE(fs::exists(copy.destination_key)) << copy.destination_key;
       }});
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), 6 * chunk + 1);
  // In the order they complete: the empty object before the one read ahead of it.
  std::sort(reported.begin(), reported.end());
  EXPECT_EQ(reported, (std::vector<std::string>{"/m/obj-0", "/m/obj-1", "/m/obj-2", "/m/obj-3"}));
}

TEST_F(CopyObjects, AFailedReadStopsTheCopyAndLeavesNoPartialObject) {
  add_objects({100, 8 * chunk, 3 * chunk});
  source_.failing_key = "/m/obj-1";
  source_.failing_from = 3 * chunk;
  // One worker, so that obj-0 is committed before the failure: with two, the failure may come
  // while the file store's thread still writes obj-0, whose worker then stops before its commit.
  try {
    run({.max_concurrency = 1, .chunk_size = chunk});
    FAIL() << "the copy succeeded";
  } catch (const StorageError& error) {
    EXPECT_STREQ(error.what(), "mem://bucket/m/obj-1: connection reset by peer");
  }
  // The object committed before the failure stays; nothing of the others, no temporary.
  EXPECT_EQ(names_in_directory(), std::vector<std::string>{"obj-0"});
  EXPECT_EQ(read_file(copies_[0].destination_key), objects_->at("/m/obj-0"));
}

TEST_F(CopyObjects, AnObjectWhoseSizeIsNoLongerTheListedOneIsRefused) {
  add_objects({2 * chunk});
  copies_[0].size = chunk;
  try {
    run({.max_concurrency = 2, .chunk_size = chunk});
    FAIL() << "the copy succeeded";
  } catch (const StorageError& error) {
    EXPECT_STREQ(error.what(),
                 "mem://bucket/m/obj-0: changed since it was listed (4096 bytes, now 8192); copy "
                 "it again");
  }
  EXPECT_TRUE(names_in_directory().empty());
}

TEST_F(CopyObjects, ADestinationThatCannotWriteIsRefusedBeforeAnyRead) {
  add_objects({10});
  CountingStore destination(objects_);
  EXPECT_THROW(testing::run_task(copy_objects(source_, copies_, destination)),
               InvalidArgument);
  EXPECT_EQ(source_.reads, 0u);
}

TEST_F(CopyObjects, BadOptionsAreRejected) {
  add_objects({10});
  EXPECT_THROW(run({.max_concurrency = 0}), InvalidArgument);
  EXPECT_THROW(run({.chunk_size = 0}), InvalidArgument);
  EXPECT_THROW(run({.parts_in_flight_per_object = 0}), InvalidArgument);
  EXPECT_EQ(source_.reads, 0u);
}

}  // namespace
}  // namespace tensorstream
