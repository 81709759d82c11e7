#include "storage/file/read_pieces.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace tensorstream {
namespace {

std::uint64_t align_down(std::uint64_t value) { return value / kDirectAlignment * kDirectAlignment; }

std::uint64_t align_up(std::uint64_t value) { return align_down(value + kDirectAlignment - 1); }

}  // namespace

bool aligned_for_direct_io(std::uint64_t offset, const std::byte* destination) {
  return reinterpret_cast<std::uintptr_t>(destination) % kDirectAlignment ==
         offset % kDirectAlignment;
}

ReadPiece::ReadPiece(int fd, std::uint64_t offset, std::byte* data, std::size_t length)
    : fd_(fd), offset_(offset), data_(data), length_(length) {}

ReadPiece ReadPiece::direct(int fd, int direct_fd, std::uint64_t offset, std::byte* data,
                            std::size_t length) {
  ReadPiece piece(fd, offset, data, length);
  piece.direct_fd_ = direct_fd;
  return piece;
}

ReadPiece ReadPiece::bounced(int fd, int direct_fd, std::uint64_t offset, std::byte* data,
                             std::size_t length) {
  ReadPiece piece = direct(fd, direct_fd, offset, data, length);
  piece.skip_ = offset - align_down(offset);
  piece.bounce_.reset(
      static_cast<std::byte*>(std::aligned_alloc(kDirectAlignment, kDirectAlignment)));
  if (!piece.bounce_) throw std::bad_alloc();
  return piece;
}

ReadPiece::Progress ReadPiece::advance(std::size_t count) {
  if (bounce_) {
    // A block read stops short only where the file ends.
    if (count < skip_ + length_) return Progress::eof;
    std::memcpy(data_, bounce_.get() + skip_, length_);
    return Progress::done;
  }
  if (count >= length_) return Progress::done;
  // A direct read ending off a block boundary ends at the end of the file; reading on from
  // there would only be refused for the unaligned offset.
  if (count == 0 || (is_direct() && count % kDirectAlignment != 0)) return Progress::eof;
  offset_ += count;
  data_ += count;
  length_ -= count;
  return Progress::again;
}

void ReadPiece::read_buffered() {
  direct_fd_ = -1;
  bounce_.reset();
  skip_ = 0;
}

std::vector<ReadPiece> split_read(const FileRead& read, std::size_t piece_size) {
  std::vector<ReadPiece> pieces;
  if (read.destination.empty()) return pieces;
  std::byte* const data = read.destination.data();
  const std::uint64_t begin = read.offset;
  const std::uint64_t end = begin + read.destination.size();
  const auto add_pieces = [&](std::uint64_t from, std::uint64_t to, bool direct) {
    for (std::uint64_t at = from; at < to; at += piece_size) {
      const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(piece_size, to - at));
      std::byte* const target = data + (at - begin);
      pieces.push_back(direct ? ReadPiece::direct(read.fd, read.direct_fd, at, target, length)
                              : ReadPiece(read.fd, at, target, length));
    }
  };
  if (read.direct_fd < 0) {
    add_pieces(begin, end, false);
    return pieces;
  }
  // The blocks the read touches: a head block it starts inside, whole blocks, and a tail
  // block it ends inside (which is the head block for a read within one block).
  const std::uint64_t middle_begin = align_up(begin);
  const std::uint64_t middle_end = std::max(align_down(end), middle_begin);
  if (begin < middle_begin) {
    const std::uint64_t head_end = std::min(end, middle_begin);
    pieces.push_back(ReadPiece::bounced(read.fd, read.direct_fd, begin, data,
                                        static_cast<std::size_t>(head_end - begin)));
  }
  add_pieces(middle_begin, middle_end, true);
  if (middle_end < end) {
    pieces.push_back(ReadPiece::bounced(read.fd, read.direct_fd, middle_end,
                                        data + (middle_end - begin),
                                        static_cast<std::size_t>(end - middle_end)));
  }
  return pieces;
}

}  // namespace tensorstream
