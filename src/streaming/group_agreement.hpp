#pragma once
// What the members of a distributed stream compare before they share work, and how they name a
// failure to each other and to their callers.

#include <string>
#include <vector>

#include "streaming/read_plan.hpp"
#include "tensorstream/distributed/broadcast_group.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// Members with equal keys need the same files and form one group: "tp{size}/rank{rank}".
std::string group_key(const StreamerOptions& options);

/// What a member streams, which every member of the world must stream alike: the resolved URL
/// and the options that shape the plan ("'file:///m/' with chunk_size 16 MiB, memory_limit
/// 512 MiB, read_order smallest_first").
std::string member_description(const std::string& remote_path, const StreamerOptions& options);

/// A line that differs between two plans that differ (tensors, bytes, reads and a 64-bit digest
/// of every read's file, offset and length), then a line "URL\tVERSION" for each file read, in
/// plan order, VERSION as ObjectVersion::encode() writes it: members that plan alike but pinned
/// different versions of an object would broadcast bytes of both.
std::string plan_summary(const std::vector<PlannedRead>& reads);

/// Checks the members' "DESCRIPTION\nPLAN" (or "DESCRIPTION\nerror\nMESSAGE", from a member
/// that could not read the headers) gathered in rank order: throws Error, the same on every
/// member, naming the first member that failed and why, or two members that disagree: on the
/// plan, or on the version of an object (naming it).
void check_agreement(const std::vector<std::string>& summaries, const BroadcastGroup& group,
                     const std::string& remote_path);

/// The message a member fails with when the broadcast of `read` from `owner` failed.
std::string broadcast_failure_message(const std::string& remote_path, const BroadcastGroup& group,
                                      const PlannedRead& read, int owner,
                                      const BroadcastGroup::Outcome& outcome);

}  // namespace tensorstream::detail
