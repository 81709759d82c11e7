#pragma once

#include <vector>

#include "streaming/read_plan.hpp"

namespace tensorstream::detail {

/// The member of a group of `members` that reads each of `reads` from the store, by bytes: in
/// plan order, each read goes to the member with the fewest bytes so far (the lowest rank on a
/// tie). Every member computes the same owners from the same plan. Members' shares then differ
/// by at most the largest read, and each member's reads are spread over the whole plan, so all
/// of them read at once while the broadcasts follow the plan's order.
std::vector<int> assign_owners(const std::vector<PlannedRead>& reads, int members);

}  // namespace tensorstream::detail
