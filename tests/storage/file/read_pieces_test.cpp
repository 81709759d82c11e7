// How a file read splits into the kernel's requests, and what the readers do when the kernel
// refuses a direct one.

#include "storage/file/read_pieces.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "storage/file/io_uring_reader.hpp"
#include "storage/file/pread_reader.hpp"
#include "support/files.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"

namespace tensorstream {
namespace {
// Named: the test files of an area are compiled together.
namespace read_pieces {

using testing::MiB;
constexpr std::size_t kBlock = kDirectAlignment;
constexpr std::size_t kPiece = 4 * kBlock;

// What the kernel is asked for: descriptor, file offset, byte count, and where the bytes go
// relative to the destination (-1: a bounce buffer of the piece's own).
using Request = std::tuple<int, std::uint64_t, std::size_t, std::ptrdiff_t>;

std::vector<Request> requests(const FileRead& read) {
  std::vector<Request> result;
  for (const ReadPiece& piece : split_read(read, kPiece)) {
    const std::byte* const data = piece.kernel_data();
    const bool in_place = data >= read.destination.data() &&
                          data < read.destination.data() + read.destination.size();
    const std::ptrdiff_t target = in_place ? data - read.destination.data() : -1;
    result.emplace_back(piece.kernel_fd(), piece.kernel_offset(), piece.kernel_length(), target);
  }
  return result;
}

// Destination memory aligned as file offset `offset` is.
std::byte* aligned_as(std::vector<std::byte>& memory, std::uint64_t offset) {
  const auto address = reinterpret_cast<std::uintptr_t>(memory.data());
  return memory.data() + (offset - address) % kBlock;
}

TEST(SplitRead, ThroughThePageCacheInPiecesOfTheGivenSize) {
  std::vector<std::byte> memory(3 * kPiece);
  const FileRead read{3, -1, 10, std::span(memory.data(), 2 * kPiece + 1)};
  EXPECT_EQ(requests(read), (std::vector<Request>{{3, 10, kPiece, 0},
                                                  {3, 10 + kPiece, kPiece, kPiece},
                                                  {3, 10 + 2 * kPiece, 1, 2 * kPiece}}));
  EXPECT_TRUE(split_read(FileRead{3, -1, 10, {}}, kPiece).empty());
}

TEST(SplitRead, DirectlyTheAlignedMiddleInPlaceAndAnUnalignedHeadAndTailThroughBounces) {
  std::vector<std::byte> memory(8 * kPiece);
  const std::uint64_t offset = 3 * kBlock + 100;
  std::byte* const data = aligned_as(memory, offset);
  // Head: the rest of block 3; middle: blocks 4 to 8 in pieces of 4; tail: 7 bytes of block 9.
  const std::size_t length = (kBlock - 100) + 5 * kBlock + 7;
  const FileRead read{3, 4, offset, std::span(data, length)};
  ASSERT_TRUE(aligned_for_direct_io(offset, data));
  EXPECT_EQ(requests(read),
            (std::vector<Request>{{4, 3 * kBlock, kBlock, -1},
                                  {4, 4 * kBlock, kPiece, kBlock - 100},
                                  {4, 8 * kBlock, kBlock, kBlock - 100 + kPiece},
                                  {4, 9 * kBlock, kBlock, -1}}));
}

TEST(SplitRead, ADirectReadInsideOneBlockIsOneBounce) {
  std::vector<std::byte> memory(4 * kBlock);
  const FileRead read{3, 4, 5 * kBlock + 10, std::span(aligned_as(memory, 10), 20)};
  EXPECT_EQ(requests(read), (std::vector<Request>{{4, 5 * kBlock, kBlock, -1}}));
}

TEST(SplitRead, AnAlignedDirectReadNeedsNoBounce) {
  std::vector<std::byte> memory(4 * kBlock);
  const FileRead read{3, 4, kBlock, std::span(aligned_as(memory, 0), 2 * kBlock)};
  EXPECT_EQ(requests(read), (std::vector<Request>{{4, kBlock, 2 * kBlock, 0}}));
}

TEST(ReadPiece, ABounceCopiesOutItsBytesOnceTheBlockIsRead) {
  std::vector<std::byte> destination(20);
  ReadPiece piece = ReadPiece::bounced(3, 4, 5 * kBlock + 10, destination.data(), 20);
  for (std::size_t i = 0; i < kBlock; ++i) piece.kernel_data()[i] = std::byte(i % 251);
  EXPECT_EQ(piece.advance(29), ReadPiece::Progress::eof) << "the file ends before byte 30";
  EXPECT_EQ(piece.advance(30), ReadPiece::Progress::done);
  for (std::size_t i = 0; i < 20; ++i) EXPECT_EQ(destination[i], std::byte((10 + i) % 251));
}

TEST(ReadPiece, AShortDirectReadGoesOnFromABlockBoundaryAndEndsTheFileElsewhere) {
  std::vector<std::byte> memory(4 * kBlock);
  ReadPiece piece = ReadPiece::direct(3, 4, 0, aligned_as(memory, 0), 3 * kBlock);
  EXPECT_EQ(piece.advance(kBlock), ReadPiece::Progress::again);
  EXPECT_EQ(piece.kernel_offset(), kBlock);
  EXPECT_EQ(piece.kernel_length(), 2 * kBlock);
  EXPECT_EQ(piece.advance(100), ReadPiece::Progress::eof);
}

enum class Reader { io_uring, pread };

class RefusedDirectRead : public ::testing::TestWithParam<Reader> {};

std::string reader_name(const ::testing::TestParamInfo<Reader>& info) {
  return info.param == Reader::io_uring ? "IoUring" : "Pread";
}

INSTANTIATE_TEST_SUITE_P(Readers, RefusedDirectRead,
                         ::testing::Values(Reader::io_uring, Reader::pread), reader_name);

// Memory off the alignment the file system asks for is what the kernel refuses most portably:
// the readers then read the same bytes through the page cache and say so.
TEST_P(RefusedDirectRead, IsReadThroughThePageCache) {
  testing::TempDir directory;
  const auto path = directory.path() / "data.bin";
  const std::string contents = testing::random_bytes(2 * MiB + 123, 5);
  testing::write_file(path, contents);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int direct_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  ASSERT_GE(fd, 0);
  if (direct_fd < 0) {
    ::close(fd);
    GTEST_SKIP() << "the file system of " << directory.path() << " refuses O_DIRECT";
  }

  boost::asio::io_context context;
  std::unique_ptr<FileReader> reader;
  if (GetParam() == Reader::io_uring) {
    boost::system::error_code error;
    reader = IoUringReader::create(context.get_executor(), 8, error);
    if (!reader) GTEST_SKIP() << "io_uring is unavailable here: " << error.message();
  } else {
    reader = std::make_unique<PreadReader>(context.get_executor(), 1);
  }
  std::vector<std::byte> memory(2 * MiB + 2 * kBlock);
  // One byte off the file's alignment: not even 2-byte aligned in memory.
  std::byte* const data = aligned_as(memory, 1);
  bool refused = false;
  const FileRead read{fd, direct_fd, 0, std::span(data, 2 * MiB), &refused};
  boost::system::error_code result = boost::asio::error::would_block;
  async_read_file(*reader, read, [&](boost::system::error_code error) { result = error; });
  context.run();
  ::close(direct_fd);
  ::close(fd);
  if (!refused) GTEST_SKIP() << "the file system read unaligned memory directly (tmpfs does)";
  EXPECT_FALSE(result) << result.message();
  EXPECT_EQ(std::memcmp(data, contents.data(), 2 * MiB), 0);
}

}  // namespace read_pieces
}  // namespace
}  // namespace tensorstream
