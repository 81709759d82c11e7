#include "storage/cache/cache_entry.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "storage/file/direct_io.hpp"
#include "storage/file/read_pieces.hpp"
#include "tensorstream/error.hpp"

namespace fs = std::filesystem;

namespace tensorstream::detail {
namespace {

// Checked reads of a segment outside the destination go through a buffer of this size.
constexpr std::size_t verify_piece = 1 << 20;

// Direct reads of the aligned middle go in pieces of this size, each a request to the disk.
constexpr std::size_t direct_piece = 4 << 20;

// Reads into the destination go in pieces of this size, each hashed while it is still in the
// processor's second-level cache.
constexpr std::size_t hash_piece = 256 << 10;

[[noreturn]] void fail_at(const fs::path& file, const std::string& what, int error) {
  throw StorageError(file.string(), what + ": " + std::strerror(error));
}

void read_exactly(int fd, const fs::path& file, std::uint64_t offset, std::span<std::byte> into) {
  std::size_t done = 0;
  while (done < into.size()) {
    const ssize_t got = ::pread(fd, into.data() + done, into.size() - done,
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail_at(file, "cannot read the cache", errno);
    if (got == 0) throw StorageError(file.string(), "the cache's data file is shorter than its entry says");
    done += static_cast<std::size_t>(got);
  }
}

// A lock of `type` on [offset, offset + length), as fcntl takes it.
struct flock range_lock(short type, std::uint64_t offset, std::uint64_t length) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(offset);
  lock.l_len = static_cast<off_t>(length);
  return lock;
}

// An advisory lock on [offset, offset + length) of `fd`, shared by nothing: open file
// description locks, so that two entries of one process exclude each other as two processes do.
bool try_lock_range(int fd, std::uint64_t offset, std::uint64_t length, short type) {
  struct flock lock = range_lock(type, offset, length);
  return ::fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

// Locks for writing the parts of [from, to) that no other open file description has locked,
// adding each to `pieces`: a range another process is filling in the middle of this one leaves
// the parts on either side to this one.
void lock_unlocked_parts(int fd, std::uint64_t from, std::uint64_t to,
                         std::vector<Segment>& pieces) {
  while (from < to) {
    if (try_lock_range(fd, from, to - from, F_WRLCK)) {
      pieces.push_back(Segment{from, to - from, 0});
      return;
    }
    struct flock conflict = range_lock(F_WRLCK, from, to - from);
    if (::fcntl(fd, F_OFD_GETLK, &conflict) != 0) return;
    if (conflict.l_type == F_UNLCK) continue;  // released meanwhile
    const auto start = static_cast<std::uint64_t>(conflict.l_start);
    const std::uint64_t finish =
        conflict.l_len == 0 ? to : start + static_cast<std::uint64_t>(conflict.l_len);
    lock_unlocked_parts(fd, from, std::max(from, start), pieces);
    from = std::min(to, finish);
  }
}

}  // namespace

std::unique_ptr<CacheEntry> CacheEntry::open(const fs::path& directory, const EntryInfo& expected,
                                             bool writable, Use use) {
  const auto info = read_entry_info(directory);
  if (!info || info->url != expected.url || info->key() != expected.key() ||
      info->version != expected.version || info->size != expected.size) {
    return nullptr;
  }
  std::unique_ptr<CacheEntry> entry(new CacheEntry(directory, *info, writable));
  entry->info_fd_ = ::open((directory / "info").c_str(), O_RDONLY | O_CLOEXEC);
  if (entry->info_fd_ < 0) return nullptr;
  if (::flock(entry->info_fd_, LOCK_SH) != 0) return nullptr;
  // Removed between reading its info and taking the lock: a new entry is made instead.
  struct stat locked {}, named {};
  if (::fstat(entry->info_fd_, &locked) != 0 || ::stat((directory / "info").c_str(), &named) != 0 ||
      locked.st_ino != named.st_ino || locked.st_dev != named.st_dev) {
    return nullptr;
  }
  const int data_flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  entry->data_fd_ = ::open((directory / "data").c_str(), data_flags);
  if (entry->data_fd_ < 0) fail_at(directory / "data", "cannot open the cache", errno);
  const int journal_flags = (writable ? O_RDWR | O_APPEND : O_RDONLY) | O_CLOEXEC;
  entry->journal_fd_ = ::open((directory / "journal").c_str(), journal_flags);
  if (entry->journal_fd_ < 0) fail_at(directory / "journal", "cannot open the cache", errno);
  if (use == Use::stream) ::futimens(entry->info_fd_, nullptr);
  entry->direct_fd_ = open_direct((directory / "data").string(), entry->data_fd_,
                                  DirectIo::automatic);
  return entry;
}

CacheEntry::CacheEntry(fs::path directory, EntryInfo info, bool writable)
    : directory_(std::move(directory)), info_(std::move(info)), writable_(writable) {}

CacheEntry::~CacheEntry() {
  for (const int fd : {direct_fd_.load(), journal_fd_, data_fd_, info_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void CacheEntry::refresh_locked() {
  struct stat status {};
  if (::fstat(journal_fd_, &status) != 0) fail_at(directory_ / "journal", "cannot read", errno);
  const auto size = static_cast<std::uint64_t>(status.st_size);
  if (size <= journal_read_) return;
  std::vector<std::byte> appended(size - journal_read_);
  read_exactly(journal_fd_, directory_ / "journal", journal_read_, appended);
  journal_read_ += apply_records(appended, info_.size, segments_);
}

std::vector<Segment> CacheEntry::overlapping(std::uint64_t offset, std::uint64_t end) {
  std::lock_guard lock(mutex_);
  refresh_locked();
  std::vector<Segment> found;
  auto at = segments_.upper_bound(offset);
  if (at != segments_.begin() && std::prev(at)->second.end() > offset) --at;
  for (; at != segments_.end() && at->second.offset < end; ++at) found.push_back(at->second);
  // Written by this process and not yet recorded: their bytes are in the file already.
  for (const Segment& segment : written_) {
    if (segment.offset < end && segment.end() > offset) found.push_back(segment);
  }
  std::sort(found.begin(), found.end(),
            [](const Segment& a, const Segment& b) { return a.offset < b.offset; });
  return found;
}

void CacheEntry::queue(std::uint64_t offset, std::uint64_t length) {
  std::lock_guard lock(mutex_);
  queued_.emplace_back(offset, length);
}

void CacheEntry::unqueue(std::uint64_t offset, std::uint64_t length) {
  {
    std::lock_guard lock(mutex_);
    const auto found = std::find(queued_.begin(), queued_.end(), std::pair(offset, length));
    if (found != queued_.end()) queued_.erase(found);
  }
  unqueued_.notify_all();
}

bool CacheEntry::has_queued_locked(std::uint64_t offset, std::uint64_t end) const {
  return std::any_of(queued_.begin(), queued_.end(), [&](const auto& queued) {
    return queued.first < end && queued.first + queued.second > offset;
  });
}

bool CacheEntry::has_queued(std::uint64_t offset, std::uint64_t end) {
  std::lock_guard lock(mutex_);
  return has_queued_locked(offset, end);
}

void CacheEntry::wait_for_queued(std::uint64_t offset, std::uint64_t end) {
  std::unique_lock lock(mutex_);
  unqueued_.wait(lock, [&] { return !has_queued_locked(offset, end); });
}

std::uint64_t CacheEntry::filled_bytes() {
  std::lock_guard lock(mutex_);
  refresh_locked();
  std::uint64_t total = 0;
  for (const auto& [offset, segment] : segments_) total += segment.length;
  return total;
}

bool CacheEntry::read(const Segment& segment, std::uint64_t offset,
                      std::span<std::byte> destination, std::uint64_t* direct_bytes) {
  const fs::path file = directory_ / "data";
  SegmentHasher hasher;
  std::vector<std::byte> buffer;
  // Before, inside and after the destination, in order, so the hash runs over the segment.
  const std::uint64_t inside_begin = std::max(segment.offset, offset);
  const std::uint64_t inside_end = std::min(segment.end(), offset + destination.size());
  const auto through_buffer = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t at = from; at < to;) {
      const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(verify_piece, to - at));
      buffer.resize(piece);
      read_exactly(data_fd_, file, at, buffer);
      hasher.update(buffer);
      at += piece;
    }
  };
  const auto into_destination = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t at = from; at < to;) {
      // In pieces, so that each is hashed while it is still in the processor's cache.
      const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(hash_piece, to - at));
      const std::span<std::byte> part = destination.subspan(at - offset, piece);
      read_exactly(data_fd_, file, at, part);
      hasher.update(part);
      at += piece;
    }
  };
  through_buffer(segment.offset, inside_begin);
  // With direct I/O, the aligned middle lands in place, read by the disk in large pieces.
  std::uint64_t middle_begin = inside_end, middle_end = inside_end;
  if (reads_direct() && inside_end > inside_begin &&
      aligned_for_direct_io(offset, destination.data())) {
    middle_begin = std::min(inside_end, (inside_begin + kDirectAlignment - 1) / kDirectAlignment *
                                            kDirectAlignment);
    middle_end = std::max(middle_begin, inside_end / kDirectAlignment * kDirectAlignment);
  }
  into_destination(inside_begin, middle_begin);
  for (std::uint64_t at = middle_begin; at < middle_end;) {
    const std::size_t piece =
        static_cast<std::size_t>(std::min<std::uint64_t>(direct_piece, middle_end - at));
    const std::span<std::byte> part = destination.subspan(at - offset, piece);
    if (!read_direct(at, part)) {
      into_destination(at, middle_end);
      break;
    }
    hasher.update(part);
    if (direct_bytes != nullptr) *direct_bytes += piece;
    at += piece;
  }
  into_destination(middle_end, inside_end);
  through_buffer(inside_end, segment.end());
  if (hasher.digest() == segment.hash) return true;
  {
    std::lock_guard lock(mutex_);
    const auto unrecorded = std::find_if(written_.begin(), written_.end(), [&](const Segment& s) {
      return s.offset == segment.offset && s.hash == segment.hash;
    });
    if (unrecorded != written_.end()) {
      written_.erase(unrecorded);
      try_lock_range(data_fd_, segment.offset, segment.length, F_UNLCK);
      return false;
    }
  }
  if (writable_) {
    std::lock_guard lock(mutex_);
    const auto found = segments_.find(segment.offset);
    if (found != segments_.end() && found->second.hash == segment.hash) segments_.erase(found);
    append_records(encode_record(RecordKind::drop, segment));
  } else {
    std::lock_guard lock(mutex_);
    segments_.erase(segment.offset);
  }
  return false;
}

bool CacheEntry::read_direct(std::uint64_t offset, std::span<std::byte> into) {
  const int direct = direct_fd_.load();
  for (std::size_t done = 0; done < into.size();) {
    const ssize_t got = ::pread(direct, into.data() + done, into.size() - done,
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || static_cast<std::size_t>(got) % kDirectAlignment != 0) {
      // Refused (EINVAL on some file systems) or short: the page cache serves from here on.
      direct_fd_ = -1;
      return false;
    }
    done += static_cast<std::size_t>(got);
  }
  return true;
}

bool CacheEntry::fill(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (!writable_ || bytes.empty()) return false;
  const std::uint64_t end = offset + bytes.size();
  // The parts of [offset, end) that are neither filled nor being filled here or by another
  // process (whose fcntl lock this one cannot take): each becomes a segment of its own.
  std::vector<Segment> pieces;
  {
    std::lock_guard lock(mutex_);
    refresh_locked();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;
    auto at = segments_.upper_bound(offset);
    if (at != segments_.begin()) --at;
    for (; at != segments_.end() && at->second.offset < end; ++at) {
      taken.emplace_back(at->second.offset, at->second.end());
    }
    for (const auto* others : {&written_, &reserved_}) {
      for (const Segment& other : *others) taken.emplace_back(other.offset, other.end());
    }
    std::sort(taken.begin(), taken.end());
    std::uint64_t from = offset;
    const auto add_piece = [&](std::uint64_t to) {
      const std::size_t before = pieces.size();
      lock_unlocked_parts(data_fd_, from, to, pieces);
      reserved_.insert(reserved_.end(), pieces.begin() + static_cast<std::ptrdiff_t>(before),
                       pieces.end());
    };
    for (const auto& [begin, finish] : taken) {
      if (finish <= from || begin >= end) continue;
      add_piece(std::min(begin, end));
      from = std::max(from, finish);
    }
    add_piece(end);
  }
  int error = 0;
  for (Segment& piece : pieces) {
    const auto part = bytes.subspan(piece.offset - offset, piece.length);
    SegmentHasher hasher;
    // In pieces, so that the write copies each from the processor's cache the hash left it in.
    for (std::size_t at = 0; error == 0 && at < part.size();) {
      const auto bit = part.subspan(at, std::min(hash_piece, part.size() - at));
      hasher.update(bit);
      // One writer at a time: the kernel serialises writes to a file anyway, and its waiters
      // spin while the writer copies, which takes a core from the stream on a small machine.
      std::lock_guard writing(write_mutex_);
      for (std::size_t done = 0; error == 0 && done < bit.size();) {
        const ssize_t wrote = ::pwrite(data_fd_, bit.data() + done, bit.size() - done,
                                       static_cast<off_t>(piece.offset + at + done));
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) error = wrote < 0 ? errno : EIO;
        if (wrote > 0) done += static_cast<std::size_t>(wrote);
      }
      at += bit.size();
    }
    piece.hash = hasher.digest();
  }
  std::lock_guard lock(mutex_);
  for (const Segment& piece : pieces) {
    std::erase_if(reserved_, [&](const Segment& other) { return other.offset == piece.offset; });
    if (error == 0) {
      written_.push_back(piece);  // still locked: other processes leave it alone until recorded
    } else {
      try_lock_range(data_fd_, piece.offset, piece.length, F_UNLCK);
    }
  }
  if (error != 0) fail_at(directory_ / "data", "cannot write the cache", error);
  return !pieces.empty();
}

bool CacheEntry::has_uncommitted() {
  std::lock_guard lock(mutex_);
  return !written_.empty();
}

std::uint64_t CacheEntry::commit() {
  // One commit at a time, so that a commit at exit waits for the recorder's.
  std::lock_guard committing(commit_mutex_);
  std::vector<Segment> written;
  {
    std::lock_guard lock(mutex_);
    written = written_;
  }
  if (written.empty()) return 0;
  if (::fdatasync(data_fd_) != 0) fail_at(directory_ / "data", "cannot make the cache durable", errno);
  // The ranges stay in written_ until their records are in segments_, so that a fill meanwhile
  // never finds them in neither and writes an overlapping range that its record cannot name.
  std::lock_guard lock(mutex_);
  const auto still_written = [&](const Segment& segment) {  // not dropped by read() meanwhile
    return std::any_of(written_.begin(), written_.end(), [&](const Segment& other) {
      return other.offset == segment.offset && other.hash == segment.hash;
    });
  };
  std::erase_if(written, [&](const Segment& segment) { return !still_written(segment); });
  std::string records;
  for (const auto& segment : written) records += encode_record(RecordKind::fill, segment);
  if (!records.empty()) append_records(records);
  refresh_locked();
  std::uint64_t recorded = 0;
  for (const auto& segment : written) {
    std::erase_if(written_, [&](const Segment& other) {
      return other.offset == segment.offset && other.hash == segment.hash;
    });
    try_lock_range(data_fd_, segment.offset, segment.length, F_UNLCK);
    recorded += segment.length;
  }
  return recorded;
}

void CacheEntry::append_records(const std::string& records) {
  // One write: appends of one call are not interleaved with other processes' appends.
  const ssize_t wrote = ::write(journal_fd_, records.data(), records.size());
  if (wrote != static_cast<ssize_t>(records.size())) {
    fail_at(directory_ / "journal", "cannot record filled ranges", wrote < 0 ? errno : EIO);
  }
}

}  // namespace tensorstream::detail
