// FileStore's direct I/O: exact bytes at every alignment of a range, the page cache for memory
// not aligned as the file, auto's choice by what the page cache holds, the environment, and file
// systems that refuse O_DIRECT.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/files.hpp"
#include "support/logged_messages.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {
// Named: the test files of an area are compiled together.
namespace direct_io {

namespace asio = boost::asio;
using testing::MiB;

// More than one 16 MiB piece of the io_uring reader, and not a whole number of blocks.
constexpr std::size_t kFileSize = 17 * MiB + 4099;
constexpr std::size_t kBlock = 4096;

// Memory for one read, placed as far past a page boundary as `offset` is: aligned as the file.
class AlignedBuffer {
 public:
  AlignedBuffer(std::uint64_t offset, std::size_t length, std::size_t shift = 0)
      : memory_(static_cast<std::byte*>(
            std::aligned_alloc(kBlock, (length / kBlock + 2) * kBlock))),
        bytes_(memory_.get() + (offset + shift) % kBlock, length) {}

  std::span<std::byte> bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* memory) const { std::free(memory); }
  };
  std::unique_ptr<std::byte, Free> memory_;
  std::span<std::byte> bytes_;
};

// Whether at least half of the file's pages are in the page cache.
bool mostly_cached(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  const auto size = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) return true;
  std::vector<unsigned char> resident((size + kBlock - 1) / kBlock);
  const bool known = ::mincore(mapping, size, resident.data()) == 0;
  ::munmap(mapping, size);
  const auto cached = std::count_if(resident.begin(), resident.end(),
                                    [](unsigned char bits) { return (bits & 1) != 0; });
  return !known || static_cast<std::size_t>(cached) * 2 >= resident.size();
}

// Writes the file back and asks the kernel to drop the pages of `length` bytes from `offset`
// (0: to the end), as a cold start finds them.
void evict_from_page_cache(const std::string& path, off_t offset = 0, off_t length = 0) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, offset, length, POSIX_FADV_DONTNEED);
  ::close(fd);
}

enum class Mode { io_uring, pread };

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  return info.param == Mode::io_uring ? "IoUring" : "Pread";
}

class DirectIoTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    environment_.unset("TENSORSTREAM_DIRECT_IO");
    environment_.unset("FLYTE_MODEL_LOADER_DIRECT_IO");
    if (GetParam() == Mode::io_uring) {
      if (const auto reason = FileStore::io_uring_unavailable_reason(); !reason.empty()) {
        GTEST_SKIP() << "io_uring is unavailable here: " << reason;
      }
    }
    contents_ = testing::random_bytes(kFileSize, 11);
    testing::write_file(path_, contents_);
  }

  FileOptions options(std::optional<DirectIo> mode) const {
    FileOptions options;
    options.use_io_uring = GetParam() == Mode::io_uring;
    options.direct_io = mode;
    return options;
  }

  // Skips the test where the file system of the temporary directory refuses O_DIRECT.
  bool direct_io_refused(FileStore& store) {
    return store.memory_alignment(path_) == 0;
  }

  void read(FileStore& store, std::uint64_t offset, std::span<std::byte> destination) {
    testing::run_task(context_, store.read_range(path_, offset, destination));
  }

  // Reads the range into memory aligned as the file (shifted by `shift` bytes) and compares it
  // with what was written.
  void expect_range(FileStore& store, std::uint64_t offset, std::size_t length,
                    std::size_t shift = 0) {
    const AlignedBuffer buffer(offset, length, shift);
    read(store, offset, buffer.bytes());
    EXPECT_EQ(std::memcmp(buffer.bytes().data(), contents_.data() + offset, length), 0)
        << "bytes " << offset << "+" << length;
  }

  testing::ScopedEnvironment environment_;
  testing::TempDir directory_;
  std::string path_ = (directory_.path() / "data.bin").string();
  std::string contents_;
  asio::io_context context_;
};

INSTANTIATE_TEST_SUITE_P(Modes, DirectIoTest, ::testing::Values(Mode::io_uring, Mode::pread),
                         mode_name);

#define SKIP_WHERE_DIRECT_IO_IS_REFUSED(store)                                               \
  if (direct_io_refused(store)) {                                                            \
    GTEST_SKIP() << "the file system of " << directory_.path()                               \
                 << " refuses O_DIRECT (tmpfs before Linux 6.6); "                           \
                    "ReadsOfAFileSystemThatRefusesDirectIoGoThroughThePageCache covers that"; \
  }

TEST_P(DirectIoTest, EveryAlignmentOfARangeReadsTheFilesBytesPastThePageCache) {
  FileStore store(context_.get_executor(), options(DirectIo::on));
  SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
  EXPECT_EQ(store.memory_alignment(path_), kBlock);
  // Aligned; within one block; across one boundary; unaligned head, tail or both around whole
  // blocks; more than one 16 MiB piece; up to the end of the file, which ends inside a block.
  const std::pair<std::uint64_t, std::size_t> ranges[] = {
      {0, kBlock},          {0, 1},
      {1, 10},              {kBlock - 1, 2},
      {4000, 200},          {2 * kBlock, 3 * kBlock},
      {100, 3 * MiB},       {kBlock, 3 * MiB + 5},
      {7, 17 * MiB},        {5000, kFileSize - 5000},
      {kFileSize - 1, 1},   {kFileSize - kBlock - 3, kBlock + 3},
  };
  std::uint64_t bytes = 0;
  for (const auto& [offset, length] : ranges) {
    expect_range(store, offset, length);
    bytes += length;
  }
  EXPECT_EQ(store.stats().direct_bytes, bytes);
  EXPECT_EQ(store.stats().bytes, bytes);
}

TEST_P(DirectIoTest, MemoryNotAlignedAsTheFileIsReadThroughThePageCache) {
  FileStore store(context_.get_executor(), options(DirectIo::on));
  SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
  expect_range(store, 100, 3 * MiB, 1);
  expect_range(store, 0, 2 * MiB, 512);
  EXPECT_EQ(store.stats().direct_bytes, 0u);
  EXPECT_EQ(store.stats().bytes, 5 * MiB);
}

TEST_P(DirectIoTest, ARangePastTheEndIsTruncatedNamingRangeAndSize) {
  FileStore store(context_.get_executor(), options(DirectIo::on));
  SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
  for (const std::uint64_t offset : {kFileSize - 100, kFileSize - 4099}) {
    const AlignedBuffer buffer(offset, 2 * kBlock);
    try {
      read(store, offset, buffer.bytes());
      ADD_FAILURE() << "a read of " << offset << "+" << 2 * kBlock << " did not throw";
    } catch (const StorageError& error) {
      EXPECT_EQ(error.cause(), "truncated: wanted bytes " + std::to_string(offset) + "-" +
                                   std::to_string(offset + 2 * kBlock - 1) +
                                   " but the file has " + std::to_string(kFileSize) + " bytes");
    }
  }
}

TEST_P(DirectIoTest, AutoReadsACachedFileThroughThePageCacheAndAnEvictedOneDirectly) {
  {
    FileStore store(context_.get_executor(), options(DirectIo::automatic));
    if (!mostly_cached(path_)) GTEST_SKIP() << "the file just written is not in the page cache";
    EXPECT_EQ(store.memory_alignment(path_), 0u);
    expect_range(store, 0, kFileSize);
    EXPECT_EQ(store.stats().direct_bytes, 0u);
  }
  evict_from_page_cache(path_);
  if (mostly_cached(path_)) {
    GTEST_SKIP() << "the page cache keeps the file after POSIX_FADV_DONTNEED (tmpfs?)";
  }
  FileStore store(context_.get_executor(), options(DirectIo::automatic));
  SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
  EXPECT_EQ(store.memory_alignment(path_), kBlock);
  expect_range(store, 0, kFileSize);
  EXPECT_EQ(store.stats().direct_bytes, kFileSize);
  EXPECT_FALSE(mostly_cached(path_)) << "direct reads leave the page cache alone";
}

// Auto samples the file's pages rather than asking about each: the estimate still tells a file
// that is mostly cached from one that is mostly not, wherever the cached part lies. (This guards
// the decision, not its cost: a scan of every page passes too.)
TEST_P(DirectIoTest, AutoReadsAFileAQuarterCachedDirectlyAndOneThreeQuartersCachedThroughTheCache) {
  const auto quarter = static_cast<off_t>(kFileSize / 4 / kBlock * kBlock);
  evict_from_page_cache(path_, quarter, 0);
  if (mostly_cached(path_)) {
    GTEST_SKIP() << "the page cache keeps the file after POSIX_FADV_DONTNEED (tmpfs?)";
  }
  {
    FileStore store(context_.get_executor(), options(DirectIo::automatic));
    SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
    EXPECT_EQ(store.memory_alignment(path_), kBlock) << "the first quarter cached";
  }
  testing::write_file(path_, contents_);
  evict_from_page_cache(path_, 0, quarter);
  if (!mostly_cached(path_)) GTEST_SKIP() << "the file just written is not in the page cache";
  FileStore store(context_.get_executor(), options(DirectIo::automatic));
  EXPECT_EQ(store.memory_alignment(path_), 0u) << "the last three quarters cached";
  expect_range(store, 0, kFileSize);
  EXPECT_EQ(store.stats().direct_bytes, 0u);
}

TEST_P(DirectIoTest, OffReadsEverythingThroughThePageCache) {
  evict_from_page_cache(path_);
  FileStore store(context_.get_executor(), options(DirectIo::off));
  EXPECT_EQ(store.memory_alignment(path_), 0u);
  expect_range(store, 0, kFileSize);
  EXPECT_EQ(store.stats().direct_bytes, 0u);
}

TEST_P(DirectIoTest, TheEnvironmentChoosesWhereTheOptionsDoNot) {
  environment_.set("TENSORSTREAM_DIRECT_IO", "off");
  {
    FileStore store(context_.get_executor(), options(std::nullopt));
    EXPECT_EQ(store.memory_alignment(path_), 0u);
  }
  environment_.set("TENSORSTREAM_DIRECT_IO", "on");
  {
    FileStore store(context_.get_executor(), options(std::nullopt));
    SKIP_WHERE_DIRECT_IO_IS_REFUSED(store);
    EXPECT_EQ(store.memory_alignment(path_), kBlock);
    FileStore explicitly_off(context_.get_executor(), options(DirectIo::off));
    EXPECT_EQ(explicitly_off.memory_alignment(path_), 0u) << "the option wins";
  }
  environment_.set("TENSORSTREAM_DIRECT_IO", "sometimes");
  try {
    FileStore store(context_.get_executor(), options(std::nullopt));
    ADD_FAILURE() << "TENSORSTREAM_DIRECT_IO=sometimes was accepted";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "TENSORSTREAM_DIRECT_IO='sometimes' is not auto, on or off");
  }
}

// procfs and sysfs refuse O_DIRECT as tmpfs did before Linux 6.6; a sysfs attribute is a regular
// file with bytes that stay put.
TEST_P(DirectIoTest, ReadsOfAFileSystemThatRefusesDirectIoGoThroughThePageCache) {
  const std::string path = "/sys/kernel/mm/transparent_hugepage/enabled";
  std::string expected;
  std::getline(std::ifstream(path), expected);
  if (expected.empty()) GTEST_SKIP() << path << " cannot be read here";
  const testing::LoggedMessages logged(LogLevel::debug);
  FileStore store(context_.get_executor(), options(DirectIo::on));
  EXPECT_EQ(store.memory_alignment(path), 0u);
  std::string bytes(expected.size(), '\0');
  testing::run_task(context_,
                    store.read_range(path, 0, std::as_writable_bytes(std::span(bytes))));
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(store.stats().direct_bytes, 0u);
  const auto messages = logged.messages();
  EXPECT_TRUE(std::any_of(messages.begin(), messages.end(), [&](const std::string& message) {
    return message.starts_with(path + ": the file system refuses direct I/O (");
  })) << "no debug line says why";
}

}  // namespace direct_io
}  // namespace
}  // namespace tensorstream
