#include "tensorstream/storage/cached_store.hpp"

#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/memory_store.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/cache_directory.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {
namespace {

using testing::MemoryObjects;
using testing::MemoryStore;
using testing::read_string;
using testing::TempDir;

class CachedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4000; ++i) text_ += static_cast<char>('a' + i % 26);
    objects_ = std::make_shared<MemoryObjects>(MemoryObjects{{"/m/model.safetensors", text_}});
  }

  // A cached store over a fresh memory store of the same objects (in `place`), in `mode`.
  std::unique_ptr<CachedStore> open(CacheMode mode = CacheMode::readwrite,
                                    std::uint64_t write_behind = ResolvedCache{}.write_behind,
                                    const std::string& place = "") {
    auto source = std::make_unique<MemoryStore>("bucket", objects_, place);
    source_ = source.get();
    ResolvedCache cache{cache_.path().string(), mode, std::nullopt, write_behind};
    return std::make_unique<CachedStore>(std::move(source), std::move(cache), io_.get_executor());
  }

  std::string read(ObjectStore& store, std::uint64_t offset, std::size_t size) {
    return read_string(io_, store, "/m/model.safetensors", offset, size);
  }

  boost::asio::io_context io_;
  TempDir cache_;
  std::string text_;
  std::shared_ptr<MemoryObjects> objects_;
  MemoryStore* source_ = nullptr;
};

TEST_F(CachedStoreTest, OnlyTheBytesTheCacheLacksAreFetched) {
  {
    auto store = open();
    EXPECT_EQ(read(*store, 100, 1000), text_.substr(100, 1000));
    EXPECT_EQ(source_->stats().bytes, 1000u);
  }
  auto store = open();
  EXPECT_EQ(read(*store, 0, 2000), text_.substr(0, 2000));
  EXPECT_EQ(source_->stats().bytes, 1000u) << "[0, 100) and [1100, 2000)";
  EXPECT_EQ(store->stats().cached_bytes, 1000u);
  EXPECT_EQ(store->stats().bytes, 2000u);
  EXPECT_EQ(store->stats().io_mode, "memory + cache");
}

TEST_F(CachedStoreTest, WithoutWriteBehindAReadHasWrittenItsBytesWhenItCompletes) {
  auto writing = open(CacheMode::readwrite, 0);
  MemoryStore* first_source = source_;
  EXPECT_EQ(read(*writing, 100, 1000), text_.substr(100, 1000));
  // Written, not yet recorded: a second store of this process shares the open entry.
  auto reading = open();
  EXPECT_EQ(read(*reading, 100, 1000), text_.substr(100, 1000));
  EXPECT_EQ(source_->stats().bytes, 0u);
  EXPECT_EQ(reading->stats().cached_bytes, 1000u);
  EXPECT_EQ(first_source->stats().bytes, 1000u);
}

TEST_F(CachedStoreTest, AProgramThatEndsWithItsStoreOpenLeavesWhatItReadCached) {
  // Large enough that its write is still under way when exit() begins.
  text_.resize(std::size_t{64} << 20, 'x');
  objects_ = std::make_shared<MemoryObjects>(MemoryObjects{{"/m/model.safetensors", text_}});
  EXPECT_EXIT(
      {
        CachedStore* never_closed = open().release();
        read(*never_closed, 0, text_.size());
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  auto store = open();
  EXPECT_EQ(read(*store, 0, text_.size()), text_);
  EXPECT_EQ(source_->stats().bytes, 0u);
}

// The scheduling policy of each of this process's threads named `name`.
std::vector<int> policies_of_threads_named(const std::string& name) {
  std::vector<int> policies;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string comm;
    std::getline(std::ifstream(task.path() / "comm"), comm);
    if (comm != name) continue;
    policies.push_back(::sched_getscheduler(std::stoi(task.path().filename().string())));
  }
  return policies;
}

TEST_F(CachedStoreTest, ItsWritersRunOnTheProcessorTimeTheStreamLeaves) {
  auto store = open();
  EXPECT_EQ(read(*store, 0, 4000), text_);
  // Each writer lowers its own priority when it starts, which this test may overtake.
  std::vector<int> policies;
  for (int tries = 0; tries < 500; ++tries) {
    policies = policies_of_threads_named("ts-cache-wr");
    if (!policies.empty() &&
        std::all_of(policies.begin(), policies.end(), [](int p) { return p == SCHED_IDLE; })) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(policies, std::vector<int>(2, SCHED_IDLE));
}

// Without CAP_SYS_NICE and with an RLIMIT_NICE below 20 (an unprivileged container), a thread
// at SCHED_IDLE cannot come back to SCHED_OTHER: writers that dropped there would stay behind
// every other thread while a read or the exit waits for them.
TEST_F(CachedStoreTest, WritersThatCouldNotComeBackFromIdlePriorityStayAtNormalPriority) {
  rlimit nice_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NICE, &nice_limit), 0);
  const rlimit lowered{0, nice_limit.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NICE, &lowered), 0);
  std::vector<int> policies;
  // Capabilities belong to a thread, and the threads it starts inherit them.
  std::thread unprivileged([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    ASSERT_EQ(::syscall(SYS_capget, &header, data), 0);
    data[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
    ASSERT_EQ(::syscall(SYS_capset, &header, data), 0);
    auto store = open();
    EXPECT_EQ(read(*store, 0, 4000), text_);
    // Both writers named, and past the start where they would lower their priority.
    for (int tries = 0; tries < 500 && policies_of_threads_named("ts-cache-wr").size() < 2;
         ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    policies = policies_of_threads_named("ts-cache-wr");
  });
  unprivileged.join();
  ::setrlimit(RLIMIT_NICE, &nice_limit);
  EXPECT_EQ(policies, std::vector<int>(2, SCHED_OTHER));
}

TEST_F(CachedStoreTest, ARangePastTheLargestOffsetIsAnInvalidArgument) {
  auto store = open();
  std::byte byte[2];
  try {
    testing::run_task(io_, store->read_range("/m/model.safetensors",
                                             std::numeric_limits<std::uint64_t>::max(), byte));
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "mem://bucket/m/model.safetensors: byte range at offset 18446744073709551615 "
              "overflows");
  }
}

// Two places (say two Azure storage accounts) with a bucket of one name hold two objects under
// one URL: two entries, and offline each store finds its own.
TEST_F(CachedStoreTest, ObjectsOfOneUrlInTwoPlacesGetAnEntryEach) {
  const std::string east_text = text_;
  {
    auto east = open(CacheMode::readwrite, ResolvedCache{}.write_behind, "east");
    EXPECT_EQ(read(*east, 0, 4000), east_text);
  }
  std::reverse(text_.begin(), text_.end());
  objects_ = std::make_shared<MemoryObjects>(MemoryObjects{{"/m/model.safetensors", text_}});
  {
    auto west = open(CacheMode::readwrite, ResolvedCache{}.write_behind, "west");
    EXPECT_EQ(read(*west, 0, 4000), text_);
  }
  EXPECT_EQ(list_cache(cache_.path().string()).size(), 2u);
  auto east = open(CacheMode::offline, ResolvedCache{}.write_behind, "east");
  EXPECT_EQ(read(*east, 0, 4000), east_text);
  auto west = open(CacheMode::offline, ResolvedCache{}.write_behind, "west");
  EXPECT_EQ(read(*west, 0, 4000), text_);
}

// ls, du and verify look after a cache; a stream's use is what least-recently-used eviction and
// `prune --older-than` go by.
TEST_F(CachedStoreTest, LookingAfterTheCacheLeavesEveryEntrysLastUseAlone) {
  {
    auto store = open();
    read(*store, 0, 4000);
  }
  auto entries = list_cache(cache_.path().string());
  ASSERT_EQ(entries.size(), 1u);
  const auto long_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(std::filesystem::path(entries[0].directory) / "info", long_ago);
  const auto before = list_cache(cache_.path().string())[0].last_used;
  verify_cache(cache_.path().string());
  list_cache(cache_.path().string());
  EXPECT_EQ(list_cache(cache_.path().string())[0].last_used, before);
  EXPECT_EQ(prune_cache(cache_.path().string(), std::chrono::hours(1)).size(), 1u);
}

TEST_F(CachedStoreTest, AStoreInReadModeAddsNothing) {
  {
    auto store = open(CacheMode::read);
    EXPECT_EQ(read(*store, 0, 4000), text_);
  }
  EXPECT_TRUE(list_cache(cache_.path().string()).empty());
}

TEST_F(CachedStoreTest, ListCacheReportsWhatAnEntryHolds) {
  {
    auto store = open();
    read(*store, 0, 1500);
  }
  const auto entries = list_cache(cache_.path().string());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].url, "mem://bucket/m/model.safetensors");
  EXPECT_EQ(entries[0].version.describe(), "memory");
  EXPECT_EQ(entries[0].size, 4000u);
  EXPECT_EQ(entries[0].cached_bytes, 1500u);
  EXPECT_FALSE(entries[0].in_use);
}

// An earlier build's entry named its version as messages do, which is no identity: it is listed
// (so that eviction and prune remove it) but no stream opens it, and a stream makes a new entry.
TEST_F(CachedStoreTest, AnEntryOfAnEarlierBuildIsListedButNeverOpened) {
  {
    auto store = open();
    read(*store, 0, 4000);
  }
  const auto made = list_cache(cache_.path().string());
  ASSERT_EQ(made.size(), 1u);
  // Where the earlier build named it: by the hash of `memory` and the size.
  const std::filesystem::path earlier =
      std::filesystem::path(made[0].directory).parent_path() / "0123456789abcdef0123456789abcdef";
  std::filesystem::rename(made[0].directory, earlier);
  std::ofstream(earlier / "info") << "tensorstream-cache-entry 1\nurl " << made[0].url
                                  << "\nversion memory\nsize 4000\n";
  const auto listed = list_cache(cache_.path().string());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].version.empty());
  EXPECT_EQ(listed[0].cached_bytes, 4000u);
  EXPECT_THROW(read(*open(CacheMode::offline), 0, 4000), NotFoundError);

  {
    auto store = open();
    EXPECT_EQ(read(*store, 0, 4000), text_);
    EXPECT_EQ(source_->stats().bytes, 4000u) << "nothing came from the earlier entry";
  }
  EXPECT_EQ(list_cache(cache_.path().string()).size(), 2u);
  EXPECT_EQ(read(*open(CacheMode::offline), 0, 4000), text_);
  EXPECT_EQ(prune_cache(cache_.path().string(), {}).size(), 2u);
}

TEST_F(CachedStoreTest, AnEntryIsInUseWhileAStoreHasItOpen) {
  auto store = open();
  read(*store, 0, 10);
  const auto entries = list_cache(cache_.path().string());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].in_use);
  EXPECT_TRUE(prune_cache(cache_.path().string(), {}).empty());
  std::vector<CacheEntryStatus> kept;
  EXPECT_TRUE(remove_from_cache(cache_.path().string(), entries[0].url, &kept).empty());
  EXPECT_EQ(kept.size(), 1u);
}

TEST_F(CachedStoreTest, OfflineNeverAsksTheSource) {
  {
    auto store = open();
    read(*store, 0, 4000);
  }
  auto store = open(CacheMode::offline);
  EXPECT_EQ(testing::run_task(io_, store->size("/m/model.safetensors")), 4000u);
  EXPECT_EQ(read(*store, 0, 4000), text_);
  EXPECT_EQ(source_->stats().requests, 0u);
}

TEST_F(CachedStoreTest, ResolveCacheTakesTheOptionsBeforeTheEnvironment) {
  StoreOptions options;
  EXPECT_FALSE(resolve_cache(options));
  options.get<CacheOptions>().directory = "/var/cache/ts";
  options.get<CacheOptions>().max_size = 1 << 20;
  const auto cache = resolve_cache(options);
  ASSERT_TRUE(cache);
  EXPECT_EQ(cache->directory, "/var/cache/ts");
  EXPECT_EQ(cache->mode, CacheMode::readwrite);
  EXPECT_EQ(cache->max_size, 1u << 20);
  options.get<CacheOptions>().mode = CacheMode::off;
  EXPECT_FALSE(resolve_cache(options));
}

}  // namespace
}  // namespace tensorstream
