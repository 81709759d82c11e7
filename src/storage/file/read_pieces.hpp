#pragma once
// How one file read splits into the requests the kernel gets: pieces of at most a fixed size,
// and with direct I/O an aligned middle read in place, plus for an unaligned head or tail one
// block read into a bounce buffer and copied out.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace tensorstream {

/// Direct I/O's alignment of file offsets, lengths and memory: a page, a multiple of every
/// logical block size and memory alignment Linux file systems ask for.
constexpr std::size_t kDirectAlignment = 4096;

/// Whether `destination` lies where a direct read of the file bytes at `offset` lands in place:
/// at an address congruent to the offset modulo kDirectAlignment.
bool aligned_for_direct_io(std::uint64_t offset, const std::byte* destination);

/// One read of a file into `destination`, through the page cache from `fd`, or with direct I/O
/// from `direct_fd` (the same file opened with O_DIRECT) when that is not -1, in which case the
/// destination must be aligned_for_direct_io().
struct FileRead {
  int fd = -1;
  int direct_fd = -1;
  std::uint64_t offset = 0;
  std::span<std::byte> destination;
  /// Set, where not null, when the file system refused direct reads (EINVAL) and the reader read
  /// those bytes through the page cache instead. Must outlive the read.
  bool* direct_refused = nullptr;
};

/// One request to the kernel, and what is left of it after a short read.
class ReadPiece {
 public:
  /// How a piece stands after the kernel read some of it.
  enum class Progress { done, again, eof };

  /// The bytes [offset, offset + length) of `fd` into `data`.
  ReadPiece(int fd, std::uint64_t offset, std::byte* data, std::size_t length);
  /// The same with direct I/O from `direct_fd`; offset, data and length are aligned.
  static ReadPiece direct(int fd, int direct_fd, std::uint64_t offset, std::byte* data,
                          std::size_t length);
  /// The bytes [offset, offset + length) of one block, which they do not fill: the whole block
  /// is read with direct I/O into a buffer of its own, and those bytes copied to `data`.
  static ReadPiece bounced(int fd, int direct_fd, std::uint64_t offset, std::byte* data,
                           std::size_t length);

  /// What to hand the kernel: descriptor, memory, byte count and file offset.
  int kernel_fd() const { return direct_fd_ >= 0 ? direct_fd_ : fd_; }
  std::byte* kernel_data() const { return bounce_ ? bounce_.get() : data_; }
  std::size_t kernel_length() const { return bounce_ ? kDirectAlignment : length_; }
  std::uint64_t kernel_offset() const { return bounce_ ? offset_ - skip_ : offset_; }
  bool is_direct() const { return direct_fd_ >= 0; }

  /// Reads the rest through the page cache, after the file system refused a direct read.
  void read_buffered();

  /// Accounts for the `count` bytes the kernel read: done (a bounce copied out), again for the
  /// rest, or eof where the file ended first.
  Progress advance(std::size_t count);

 private:
  struct FreeBounce {
    void operator()(std::byte* memory) const { std::free(memory); }
  };

  int fd_;
  int direct_fd_ = -1;
  std::uint64_t offset_;
  std::byte* data_;
  std::size_t length_;
  std::unique_ptr<std::byte, FreeBounce> bounce_;
  std::size_t skip_ = 0;  // Bytes of the bounce's block before offset_.
};

/// The pieces of `read`: through the page cache, pieces of at most `piece_size` bytes; with
/// direct I/O, the aligned middle in such pieces (piece_size is a multiple of kDirectAlignment)
/// and an unaligned head or tail bounced. Empty for an empty destination.
std::vector<ReadPiece> split_read(const FileRead& read, std::size_t piece_size);

}  // namespace tensorstream
