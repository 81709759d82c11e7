#include "tensorstream/store/shared_region.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <vector>

#include "support/process_mappings.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

// A worker's view of the region: its own mapping of the descriptor.
class Mapping {
 public:
  Mapping(int fd, std::size_t size, int protection)
      : size_(size), data_(::mmap(nullptr, size, protection, MAP_SHARED, fd, 0)) {
    if (data_ == MAP_FAILED) throw std::runtime_error(std::strerror(errno));
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { ::munmap(data_, size_); }

  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  std::size_t size_;
  void* data_;
};

void fill(std::span<std::byte> bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + 3);
}

void expect_filled(const std::byte* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(bytes[i], static_cast<std::byte>(i * 7 + 3)) << "byte " << i;
  }
}

TEST(SharedRegion, StartsZeroedAndWritesAreSeenThroughAnotherMapping) {
  const auto descriptors = open_descriptors();
  {
    SharedRegion region("tensorstream-test-weights", 10000);
    EXPECT_EQ(region.name(), "tensorstream-test-weights");
    EXPECT_EQ(region.size(), 10000U);
    EXPECT_FALSE(region.sealed());
    ASSERT_EQ(region.writable().size(), 10000U);
    for (const auto byte : region.bytes()) ASSERT_EQ(byte, std::byte{0});
    fill(region.writable());

    const Mapping worker(region.fd(), region.size(), PROT_READ);
    expect_filled(worker.data(), region.size());
    EXPECT_EQ(std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(region.fd())),
              "/memfd:tensorstream-test-weights (deleted)");
  }
  EXPECT_EQ(open_descriptors(), descriptors);
}

TEST(SharedRegion, SealedRegionCannotBeWrittenResizedOrMappedWritable) {
  const auto descriptors = open_descriptors();
  {
    SharedRegion region("tensorstream-test-sealed", 4096);
    fill(region.writable());
    region.seal_read_only();
    EXPECT_TRUE(region.sealed());
    ASSERT_EQ(region.bytes().size(), 4096U);
    expect_filled(region.bytes().data(), 4096);

    EXPECT_EQ(::fcntl(region.fd(), F_GET_SEALS),
              F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    const char byte = 1;
    EXPECT_EQ(::write(region.fd(), &byte, 1), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, region.fd(), 0),
              MAP_FAILED);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(region.fd(), 8192), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(region.fd(), 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::fcntl(region.fd(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
    EXPECT_EQ(errno, EPERM);

    EXPECT_THROW(region.writable(), StateError);
    EXPECT_THROW(region.seal_read_only(), StateError);
  }
  EXPECT_EQ(open_descriptors(), descriptors);
}

TEST(SharedRegion, WorkerMappingOutlivesTheRegion) {
  const auto descriptors = open_descriptors();
  std::optional<Mapping> worker;
  {
    SharedRegion region("tensorstream-test-outlives", 3 * 4096 + 17);
    fill(region.writable());
    region.seal_read_only();
    worker.emplace(region.fd(), region.size(), PROT_READ);
  }
  EXPECT_EQ(open_descriptors(), descriptors);
  expect_filled(worker->data(), 3 * 4096 + 17);
}

TEST(SharedRegion, SealingFailsWhileAWorkerCanWrite) {
  SharedRegion region("tensorstream-test-busy", 4096);
  {
    const Mapping writer(region.fd(), region.size(), PROT_READ | PROT_WRITE);
    try {
      region.seal_read_only();
      FAIL() << "sealed despite a writable mapping";
    } catch (const StorageError& error) {
      EXPECT_EQ(error.object(), "shared region tensorstream-test-busy");
      EXPECT_EQ(error.cause(), "sealing read-only (F_ADD_SEALS): Device or resource busy");
    }
    EXPECT_FALSE(region.sealed());
    // Still writable, and the writes are shared.
    fill(region.writable());
    expect_filled(writer.data(), 4096);
  }
  region.seal_read_only();
  EXPECT_TRUE(region.sealed());
}

// Pages of `bytes` in memory (mincore), which a memfd region's are once written or populated.
std::size_t resident_pages(std::span<std::byte> bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((bytes.size() + page - 1) / page);
  if (::mincore(bytes.data(), bytes.size(), pages.data()) != 0) {
    throw std::runtime_error(std::strerror(errno));
  }
  return static_cast<std::size_t>(std::count_if(pages.begin(), pages.end(),
                                                 [](unsigned char in) { return in & 1; }));
}

TEST(SharedRegion, PopulateAllocatesEveryPageInSteps) {
  // Not a multiple of the step, so that the last one is short.
  SharedRegion region("tensorstream-test-populate", 2 * SharedRegion::populate_step + 8192);
  const std::span<std::byte> bytes = region.writable();
  ASSERT_EQ(resident_pages(bytes), 0U);
  if (!region.populate()) GTEST_SKIP() << "MADV_POPULATE_WRITE needs Linux 5.14";
  EXPECT_EQ(resident_pages(bytes), bytes.size() / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
}

TEST(SharedRegion, PopulateAskedToStopAllocatesNothing) {
  SharedRegion region("tensorstream-test-populate-stopped", 2 * SharedRegion::populate_step);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(region.populate(stop.get_token()));
  EXPECT_EQ(resident_pages(region.writable()), 0U);
}

// Whether the pages are then huge is the administrator's choice (shmem_enabled); the region asks,
// writable and sealed.
TEST(SharedRegion, ItsMappingsAskForHugePages) {
  if (!tensorstream::testing::transparent_huge_pages_available()) {
    GTEST_SKIP() << "this kernel has no transparent huge pages to ask for";
  }
  SharedRegion region("tensorstream-test-huge", 4 << 20);
  const auto flags = [&] { return tensorstream::testing::vm_flags_at(region.bytes().data()); };
  EXPECT_NE(flags().find(" hg"), std::string::npos) << flags();
  region.seal_read_only();
  EXPECT_NE(flags().find(" hg"), std::string::npos) << flags();
}

TEST(SharedRegion, DescriptorIsCloseOnExec) {
  const SharedRegion region("tensorstream-test-cloexec", 1);
  EXPECT_EQ(::fcntl(region.fd(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(SharedRegion, ZeroBytes) {
  const auto descriptors = open_descriptors();
  {
    SharedRegion region("tensorstream-test-empty", 0);
    EXPECT_EQ(region.size(), 0U);
    EXPECT_TRUE(region.writable().empty());
    EXPECT_TRUE(region.bytes().empty());
    region.seal_read_only();
    EXPECT_TRUE(region.bytes().empty());
    EXPECT_EQ(::fcntl(region.fd(), F_GET_SEALS),
              F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    EXPECT_EQ(::ftruncate(region.fd(), 1), -1);
  }
  EXPECT_EQ(open_descriptors(), descriptors);
}

TEST(SharedRegion, MovesOwnership) {
  const auto descriptors = open_descriptors();
  {
    SharedRegion first("tensorstream-test-moved", 100);
    fill(first.writable());
    const int fd = first.fd();
    SharedRegion second(std::move(first));
    EXPECT_EQ(second.fd(), fd);
    expect_filled(second.bytes().data(), 100);
    SharedRegion third("tensorstream-test-replaced", 10);
    third = std::move(second);
    EXPECT_EQ(third.fd(), fd);
    EXPECT_EQ(third.name(), "tensorstream-test-moved");
    expect_filled(third.bytes().data(), 100);
  }
  EXPECT_EQ(open_descriptors(), descriptors);
}

TEST(SharedRegion, ErrorsNameTheRegion) {
  try {
    SharedRegion region(std::string(300, 'x'), 1);
    FAIL() << "memfd_create accepted a 300-byte name";
  } catch (const StorageError& error) {
    EXPECT_EQ(error.object(), "shared region " + std::string(300, 'x'));
    EXPECT_EQ(error.cause(), "memfd_create: Invalid argument");
  }
  try {
    SharedRegion region("tensorstream-test-huge", std::uint64_t{1} << 63);
    FAIL() << "created a region of 2^63 bytes";
  } catch (const StorageError& error) {
    EXPECT_EQ(error.what(), std::string("shared region tensorstream-test-huge: ftruncate to "
                                        "9223372036854775808 bytes: File too large"));
  }
}

}  // namespace
}  // namespace tensorstream::store
