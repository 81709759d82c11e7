#include "storage/cache/fill_journal.hpp"

#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <cstring>
#include <new>

namespace tensorstream::detail {
namespace {

constexpr std::uint32_t record_magic = 0x31434354;  // "TCC1" little-endian

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T take(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// The check of a record: the hash of its first 32 bytes.
std::uint64_t record_check(const std::byte* record) { return XXH3_64bits(record, 32); }

bool overlaps_filled(const Segments& segments, const Segment& segment) {
  auto next = segments.lower_bound(segment.offset);
  if (next != segments.end() && next->second.offset < segment.end()) return true;
  if (next == segments.begin()) return false;
  return std::prev(next)->second.end() > segment.offset;
}

}  // namespace

std::string encode_record(RecordKind kind, const Segment& segment) {
  std::string record;
  record.reserve(journal_record_size);
  put(record, record_magic);
  put(record, static_cast<std::uint32_t>(kind));
  put(record, segment.offset);
  put(record, segment.length);
  put(record, segment.hash);
  put(record, record_check(reinterpret_cast<const std::byte*>(record.data())));
  return record;
}

std::size_t apply_records(std::span<const std::byte> bytes, std::uint64_t object_size,
                          Segments& segments) {
  std::size_t at = 0;
  while (bytes.size() - at >= journal_record_size) {
    const std::byte* record = bytes.data() + at;
    if (take<std::uint32_t>(record) != record_magic ||
        take<std::uint64_t>(record + 32) != record_check(record)) {
      ++at;  // a torn record: the next intact one starts at some later byte
      continue;
    }
    at += journal_record_size;
    const auto kind = static_cast<RecordKind>(take<std::uint32_t>(record + 4));
    const Segment segment{take<std::uint64_t>(record + 8), take<std::uint64_t>(record + 16),
                          take<std::uint64_t>(record + 24)};
    if (kind == RecordKind::drop) {
      const auto found = segments.find(segment.offset);
      if (found != segments.end() && found->second.length == segment.length &&
          found->second.hash == segment.hash) {
        segments.erase(found);
      }
    } else if (kind == RecordKind::fill && segment.length > 0 &&
               segment.offset <= object_size && segment.length <= object_size - segment.offset &&
               !overlaps_filled(segments, segment)) {
      segments.emplace(segment.offset, segment);
    }
  }
  return at;
}

SegmentHasher::SegmentHasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

SegmentHasher::~SegmentHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void SegmentHasher::update(std::span<const std::byte> bytes) {
  XXH3_64bits_update_dispatch(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

std::uint64_t SegmentHasher::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace tensorstream::detail
