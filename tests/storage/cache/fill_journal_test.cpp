#include "storage/cache/fill_journal.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstddef>
#include <span>
#include <string>

namespace tensorstream::detail {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(FillJournal, AFillRecordReadsBackAsItsSegment) {
  const std::string journal = encode_record(RecordKind::fill, {100, 50, 0xfeed});
  ASSERT_EQ(journal.size(), journal_record_size);
  Segments segments;
  EXPECT_EQ(apply_records(bytes_of(journal), 1000, segments), journal_record_size);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments.at(100).length, 50u);
  EXPECT_EQ(segments.at(100).hash, 0xfeedu);
}

TEST(FillJournal, ATornRecordIsSkippedAndTheNextIntactOneFound) {
  const std::string first = encode_record(RecordKind::fill, {0, 10, 1});
  const std::string torn = encode_record(RecordKind::fill, {10, 10, 2}).substr(0, 17);
  const std::string last = encode_record(RecordKind::fill, {20, 10, 3});
  Segments segments;
  const std::string journal = first + torn + last;
  EXPECT_EQ(apply_records(bytes_of(journal), 1000, segments), journal.size());
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments.count(0), 1u);
  EXPECT_EQ(segments.count(20), 1u);
}

TEST(FillJournal, AFlippedBitMakesARecordDamaged) {
  std::string record = encode_record(RecordKind::fill, {0, 10, 1});
  record[10] = static_cast<char>(record[10] ^ 1);
  Segments segments;
  apply_records(bytes_of(record), 1000, segments);
  EXPECT_TRUE(segments.empty());
}

TEST(FillJournal, ARecordStillBeingAppendedIsLeftForTheNextRead) {
  const std::string whole = encode_record(RecordKind::fill, {0, 10, 1});
  const std::string journal = whole + encode_record(RecordKind::fill, {10, 10, 2}).substr(0, 30);
  Segments segments;
  EXPECT_EQ(apply_records(bytes_of(journal), 1000, segments), journal_record_size);
  EXPECT_EQ(segments.size(), 1u);
}

TEST(FillJournal, OverlappingAndOutOfRangeFillsAreIgnored) {
  const std::string journal = encode_record(RecordKind::fill, {100, 100, 1}) +
                              encode_record(RecordKind::fill, {150, 100, 2}) +
                              encode_record(RecordKind::fill, {50, 51, 3}) +
                              encode_record(RecordKind::fill, {900, 200, 4}) +
                              encode_record(RecordKind::fill, {200, 0, 5}) +
                              encode_record(RecordKind::fill, {200, 100, 6});
  Segments segments;
  apply_records(bytes_of(journal), 1000, segments);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments.at(100).hash, 1u);
  EXPECT_EQ(segments.at(200).hash, 6u);
}

TEST(FillJournal, ADropRemovesOnlyTheSegmentItNames) {
  const std::string journal = encode_record(RecordKind::fill, {0, 10, 1}) +
                              encode_record(RecordKind::fill, {10, 10, 2}) +
                              encode_record(RecordKind::drop, {0, 10, 9}) +
                              encode_record(RecordKind::drop, {10, 10, 2});
  Segments segments;
  apply_records(bytes_of(journal), 1000, segments);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments.at(0).hash, 1u) << "a drop of another hash is of another fill";
}

// Entries written by one build are read by the next: the hash is XXH3-64 of the whole segment,
// however it was split.
TEST(FillJournal, PiecewiseHashingIsXxh3OfTheWholeSegment) {
  std::string text(3000, 'x');
  text[1500] = 'y';
  SegmentHasher hasher;
  hasher.update(bytes_of(text.substr(0, 1000)));
  hasher.update(bytes_of(text.substr(1000)));
  EXPECT_EQ(hasher.digest(), XXH3_64bits(text.data(), text.size()));
  SegmentHasher shifted;
  shifted.update(bytes_of(text.substr(1)));
  EXPECT_NE(shifted.digest(), hasher.digest());
}

}  // namespace
}  // namespace tensorstream::detail
