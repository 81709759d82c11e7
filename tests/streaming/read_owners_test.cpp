// Which member of a distributed stream reads each read of the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "streaming/read_owners.hpp"

namespace tensorstream {
namespace {

std::vector<detail::PlannedRead> reads_of(const std::vector<std::uint64_t>& lengths) {
  std::vector<detail::PlannedRead> reads;
  for (const auto length : lengths) reads.push_back({nullptr, {}, 0, length});
  return reads;
}

std::vector<std::uint64_t> shares(const std::vector<detail::PlannedRead>& reads,
                                  const std::vector<int>& owners, int members) {
  std::vector<std::uint64_t> bytes(static_cast<std::size_t>(members), 0);
  for (std::size_t i = 0; i < reads.size(); ++i) {
    bytes[static_cast<std::size_t>(owners[i])] += reads[i].length;
  }
  return bytes;
}

TEST(ReadOwners, EachReadGoesToTheMemberWithTheFewestBytesSoFar) {
  const auto reads = reads_of({10, 10, 30, 5, 5, 40});
  // 10→0, 10→1, 30→2, 5→0 (10), 5→1 (10)... rank 0 has 15, rank 1 15, rank 2 30: 40→0.
  EXPECT_EQ(detail::assign_owners(reads, 3), (std::vector<int>{0, 1, 2, 0, 1, 0}));
}

TEST(ReadOwners, SharesDifferByAtMostTheLargestRead) {
  std::vector<std::uint64_t> lengths;
  for (std::uint64_t i = 0; i < 300; ++i) lengths.push_back((i * 7919) % 1000 + 1);
  const auto reads = reads_of(lengths);
  for (const int members : {1, 2, 3, 4, 7}) {
    const auto owners = detail::assign_owners(reads, members);
    ASSERT_EQ(owners.size(), reads.size());
    const auto bytes = shares(reads, owners, members);
    const auto [least, most] = std::minmax_element(bytes.begin(), bytes.end());
    EXPECT_LE(*most - *least, 1000u) << members << " members";
  }
}

TEST(ReadOwners, MoreMembersThanReadsLeavesSomeWithNone) {
  EXPECT_EQ(detail::assign_owners(reads_of({8, 8}), 4), (std::vector<int>{0, 1}));
  EXPECT_TRUE(detail::assign_owners({}, 4).empty());
}

}  // namespace
}  // namespace tensorstream
