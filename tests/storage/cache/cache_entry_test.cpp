#include "storage/cache/cache_entry.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/cache/open_entries.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream::detail {
namespace {

namespace fs = std::filesystem;

std::span<const std::byte> text_bytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

// Two openings of one entry, as two processes have it: their range locks exclude each other.
class CacheEntryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 100; ++i) text_ += static_cast<char>('a' + i % 26);
    const std::string url = "http://127.0.0.1/m/model.safetensors";
    info_ = EntryInfo{url, ObjectVersion::etag(url, "\"etag\""), text_.size()};
    create_entry(root_.path(), info_);
  }

  std::unique_ptr<CacheEntry> open_entry() {
    auto entry = CacheEntry::open(entry_directory(root_.path(), info_), info_, true);
    EXPECT_NE(entry, nullptr);
    return entry;
  }

  std::span<const std::byte> part(std::uint64_t offset, std::uint64_t length) const {
    return text_bytes(text_).subspan(offset, length);
  }

  testing::TempDir root_;
  std::string text_;
  EntryInfo info_;
};

TEST_F(CacheEntryTest, ARangeAnotherIsFillingLeavesThePartsAroundItToThisOne) {
  auto other = open_entry();
  auto mine = open_entry();
  ASSERT_TRUE(other->fill(50, part(50, 10)));  // written, locked until recorded
  ASSERT_TRUE(mine->fill(0, part(0, 100)));
  EXPECT_EQ(mine->commit(), 90u) << "[0, 50) and [60, 100)";
  EXPECT_EQ(other->commit(), 10u);

  auto reader = open_entry();
  const std::vector<Segment> held = reader->overlapping(0, 100);
  ASSERT_EQ(held.size(), 3u);
  std::string read(100, '\0');
  for (const Segment& segment : held) {
    auto into = std::as_writable_bytes(std::span(read)).subspan(segment.offset, segment.length);
    EXPECT_TRUE(reader->read(segment, segment.offset, into));
  }
  EXPECT_EQ(read, text_);
}

TEST_F(CacheEntryTest, AReadOfARangeQueuedForAWriterWaitsUntilItIsWritten) {
  auto entry = open_entry();
  entry->queue(20, 30);
  EXPECT_TRUE(entry->has_queued(0, 21));
  EXPECT_FALSE(entry->has_queued(50, 100)) << "ranges are half-open";
  std::atomic<bool> written{false};
  auto reading = std::async(std::launch::async, [&] {
    entry->wait_for_queued(40, 60);
    return std::pair(written.load(), entry->overlapping(40, 60));
  });
  EXPECT_EQ(reading.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  ASSERT_TRUE(entry->fill(20, part(20, 30)));
  written = true;
  entry->unqueue(20, 30);
  const auto [after_the_write, held] = reading.get();
  EXPECT_TRUE(after_the_write);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].offset, 20u);
  EXPECT_EQ(held[0].length, 30u);
  EXPECT_FALSE(entry->has_queued(0, 100));
}

// A forked child (a DataLoader worker) shares the parent's open file descriptions, and with them
// its range locks: its exit must leave the parent's unrecorded ranges alone.
TEST_F(CacheEntryTest, AForkedChildsExitLeavesTheParentsEntriesAlone) {
  const fs::path directory = entry_directory(root_.path(), info_);
  std::shared_ptr<CacheEntry> parents = open_entry();
  ASSERT_TRUE(parents->fill(0, part(0, 40)));  // written, locked until recorded
  share_entry(directory, parents);
  const pid_t child = ::fork();
  if (child == 0) std::exit(0);  // runs the exit hooks, as a worker's normal end does
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(fs::file_size(directory / "journal"), 0u) << "the child recorded the parent's range";
  EXPECT_TRUE(parents->has_uncommitted());
  // The range is still locked against others, as the parent left it.
  auto other = open_entry();
  EXPECT_TRUE(other->fill(0, part(0, 100)));
  EXPECT_EQ(other->commit(), 60u) << "only [40, 100) is free for another";
  EXPECT_EQ(parents->commit(), 40u);
}

}  // namespace
}  // namespace tensorstream::detail
