#pragma once
// The journal of a cache entry: which ranges of the entry's data file hold the object's bytes.
// A range is recorded only after its bytes are written and durable, with the hash of those
// bytes, so a record never names bytes that are not there; every cached read is checked
// against the hash. Records are appended (O_APPEND, several processes at once) and never
// rewritten: a range found damaged is dropped by a later record.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace tensorstream::detail {

/// `length` bytes of the object at `offset`, whose XXH3-64 hash is `hash`.
struct Segment {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t hash = 0;

  std::uint64_t end() const { return offset + length; }
};

/// The entry's filled ranges by offset; they never overlap.
using Segments = std::map<std::uint64_t, Segment>;

/// What a record says of its segment.
enum class RecordKind : std::uint32_t {
  fill = 1,  ///< The segment's bytes are in the data file.
  drop = 2,  ///< The segment at this offset turned out damaged: it is no longer filled.
};

/// The size of one record.
constexpr std::size_t journal_record_size = 40;

/// The record of `segment`, as appended to the journal.
std::string encode_record(RecordKind kind, const Segment& segment);

/// Applies the records of `bytes` (a journal, or what was appended to it since) to `segments`
/// and returns how many bytes it consumed: all of them but a trailing record still being
/// appended. A damaged record (torn by a crash) is skipped by searching for the next intact
/// one; a fill that overlaps a filled range, or lies past `object_size`, is ignored.
std::size_t apply_records(std::span<const std::byte> bytes, std::uint64_t object_size,
                          Segments& segments);

/// A segment's hash, XXH3-64 of its bytes (which the journal's format fixes), computed piece by
/// piece as segments are read and written.
class SegmentHasher {
 public:
  SegmentHasher();
  ~SegmentHasher();
  SegmentHasher(const SegmentHasher&) = delete;
  SegmentHasher& operator=(const SegmentHasher&) = delete;

  void update(std::span<const std::byte> bytes);
  std::uint64_t digest() const;

 private:
  void* state_;
};

}  // namespace tensorstream::detail
