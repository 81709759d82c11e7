#pragma once
// One version of one object in a cache directory, open for a stream: its data file, its journal
// of filled ranges, and the shared lock that keeps it from being removed while in use. Blocking
// calls: CachedStore runs them on its own threads, never on a store's I/O threads.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "storage/cache/cache_layout.hpp"
#include "storage/cache/fill_journal.hpp"

namespace tensorstream::detail {

class CacheEntry {
 public:
  /// How an entry is opened.
  enum class Use {
    stream,   ///< For a stream: its last use becomes now, which eviction goes by.
    inspect,  ///< For looking after the cache (ls, du, verify): its last use stays.
  };

  /// Opens the entry at `directory`, holding it in use until destroyed; `writable` lets fill()
  /// add ranges. Null when the entry is gone or names another object (`expected`).
  static std::unique_ptr<CacheEntry> open(const std::filesystem::path& directory,
                                          const EntryInfo& expected, bool writable,
                                          Use use = Use::stream);
  ~CacheEntry();
  CacheEntry(const CacheEntry&) = delete;
  CacheEntry& operator=(const CacheEntry&) = delete;

  const EntryInfo& info() const { return info_; }
  const std::filesystem::path& directory() const { return directory_; }
  bool writable() const { return writable_; }

  /// Whether reads go past the page cache (direct I/O: the entry was mostly not cached when
  /// opened), landing in place in destinations aligned as the file (kDirectAlignment).
  bool reads_direct() const { return direct_fd_.load() >= 0; }

  /// The filled segments that overlap [offset, end), by offset, after taking in what other
  /// processes recorded meanwhile: recorded ones, and those this process wrote and has not
  /// recorded yet (readable, just not yet durable).
  std::vector<Segment> overlapping(std::uint64_t offset, std::uint64_t end);

  /// Marks [offset, offset + length) as queued for fill() by this process (a copy waiting for a
  /// writer thread), until unqueue() of the same range, which comes after that fill().
  void queue(std::uint64_t offset, std::uint64_t length);
  void unqueue(std::uint64_t offset, std::uint64_t length);

  /// Whether a range queued by this process overlaps [offset, end).
  bool has_queued(std::uint64_t offset, std::uint64_t end);

  /// Waits until no range queued by this process overlaps [offset, end): a read of bytes on
  /// their way into the file takes them from there rather than from the source.
  void wait_for_queued(std::uint64_t offset, std::uint64_t end);

  /// Bytes of the object the entry holds.
  std::uint64_t filled_bytes();

  /// Reads the part of `segment` at [offset, offset + destination.size()) into `destination`,
  /// checking the whole segment's hash (the rest of it goes through a small buffer). False when
  /// the bytes are not those recorded: the segment is dropped, and `destination` holds garbage.
  /// Throws StorageError when the data file cannot be read. Adds the bytes it read with direct
  /// I/O to `direct_bytes` where not null.
  bool read(const Segment& segment, std::uint64_t offset, std::span<std::byte> destination,
            std::uint64_t* direct_bytes = nullptr);

  /// Writes `bytes` (the object's, from `offset`) into the data file, unless another process is
  /// filling a range they overlap or they overlap a filled range; the range counts as filled
  /// once commit() has made it durable. Whether it wrote them. Throws StorageError.
  bool fill(std::uint64_t offset, std::span<const std::byte> bytes);

  /// Makes the ranges fill() wrote durable (fdatasync), then records them; returns their bytes.
  /// Throws StorageError.
  std::uint64_t commit();

  /// Whether fill() wrote ranges that commit() has not recorded yet.
  bool has_uncommitted();

 private:
  CacheEntry(std::filesystem::path directory, EntryInfo info, bool writable);
  void refresh_locked();
  bool has_queued_locked(std::uint64_t offset, std::uint64_t end) const;
  bool read_direct(std::uint64_t offset, std::span<std::byte> into);
  void append_records(const std::string& records);

  const std::filesystem::path directory_;
  const EntryInfo info_;
  const bool writable_;
  int info_fd_ = -1;
  int data_fd_ = -1;
  int journal_fd_ = -1;
  std::atomic<int> direct_fd_{-1};  // set back to -1 (and leaked) if the file system refuses

  std::mutex commit_mutex_;
  std::mutex write_mutex_;  // fill()'s writes to the data file
  std::mutex mutex_;
  Segments segments_;
  std::uint64_t journal_read_ = 0;  // bytes of the journal taken in
  std::vector<Segment> written_;    // filled, not yet recorded
  std::vector<Segment> reserved_;   // being filled by this process
  std::vector<std::pair<std::uint64_t, std::uint64_t>> queued_;  // offset, length
  std::condition_variable unqueued_;
};

}  // namespace tensorstream::detail
