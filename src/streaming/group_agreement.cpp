#include "streaming/group_agreement.hpp"

#include <cstdint>
#include <cstdio>
#include <set>
#include <string_view>

#include "base/byte_size.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/object_version.hpp"
#include "tensorstream/streaming/resolve_url.hpp"

namespace tensorstream::detail {
namespace {

// FNV-1a: a digest every member computes alike, not a defence against anyone.
void mix(std::uint64_t& hash, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
}

std::string read_name(const PlannedRead& read) {
  std::string name = "'" + read.tensors.front()->name + "'";
  if (read.coalesced()) name += " and " + std::to_string(read.tensors.size() - 1) + " more";
  return name;
}

// A summary's lines: the description, the plan, then "URL\tVERSION" of each file read.
std::vector<std::string> lines_of(const std::string& summary) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = summary.find('\n', begin);
    lines.push_back(summary.substr(begin, end - begin));
    if (end == std::string::npos) return lines;
    begin = end + 1;
  }
}

std::string version_text(const ObjectVersion& version) {
  return version.empty() ? "a version its store could not name" : version.describe();
}

// The version a member's "URL\tVERSION" line names; none where it names none this build reads.
ObjectVersion version_in(const std::string& line, std::size_t tab) {
  return ObjectVersion::decode(std::string_view(line).substr(tab + 1)).value_or(ObjectVersion());
}

}  // namespace

std::string group_key(const StreamerOptions& options) {
  return "tp" + std::to_string(options.tensor_parallel_size.value_or(1)) + "/rank" +
         std::to_string(options.rank);
}

std::string member_description(const std::string& remote_path, const StreamerOptions& options) {
  return "'" + resolve_url(remote_path).str() + "' with chunk_size " +
         format_byte_size(options.chunk_size.value_or(0)) + ", memory_limit " +
         format_byte_size(options.memory_limit) + ", read_order " +
         (options.read_order == ReadOrder::smallest_first ? "smallest_first" : "file_order");
}

std::string plan_summary(const std::vector<PlannedRead>& reads) {
  std::uint64_t tensors = 0;
  std::uint64_t bytes = 0;
  std::uint64_t digest = 0xcbf29ce484222325ull;
  std::string versions;
  std::set<const SourceFile*> listed;
  for (const PlannedRead& read : reads) {
    tensors += read.tensors.size();
    bytes += read.length;
    mix(digest, read.file->url.data(), read.file->url.size());
    mix(digest, &read.begin, sizeof read.begin);
    mix(digest, &read.length, sizeof read.length);
    if (listed.insert(read.file).second) {
      versions += "\n" + read.file->url + "\t" + read.file->version.encode();
    }
  }
  char text[160];
  std::snprintf(text, sizeof text, "%llu tensors in %zu reads of %llu bytes (plan %016llx)",
                static_cast<unsigned long long>(tensors), reads.size(),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(digest));
  return text + versions;
}

void check_agreement(const std::vector<std::string>& summaries, const BroadcastGroup& group,
                     const std::string& remote_path) {
  const std::string prefix = "streaming " + remote_path + " on " +
                             group.member_name(group.rank()) + ": ";
  for (std::size_t r = 0; r < summaries.size(); ++r) {
    const std::size_t newline = summaries[r].find('\n');
    const std::string rest = summaries[r].substr(newline + 1);
    if (rest.rfind("error\n", 0) == 0) {
      throw Error(prefix + group.member_name(static_cast<int>(r)) +
                  " could not read the checkpoint: " + rest.substr(6));
    }
  }
  const std::vector<std::string> first = lines_of(summaries.front());
  for (std::size_t r = 1; r < summaries.size(); ++r) {
    if (summaries[r] == summaries.front()) continue;
    const std::vector<std::string> other = lines_of(summaries[r]);
    const auto name = [&](std::size_t i) { return group.member_name(static_cast<int>(i)); };
    const bool same_plan = other.size() == first.size() && other[0] == first[0] &&
                           other[1] == first[1];
    if (!same_plan) {
      throw Error(prefix + "the members disagree: " + name(0) + " streams " + first[0] + ": " +
                  first[1] + "; " + name(r) + " streams " + other[0] + ": " + other[1]);
    }
    for (std::size_t line = 2; line < first.size(); ++line) {
      if (other[line] == first[line]) continue;
      const std::size_t tab = first[line].find('\t');
      const ObjectVersion first_version = version_in(first[line], tab);
      const ObjectVersion other_version = version_in(other[line], other[line].find('\t'));
      if (other_version == first_version) continue;
      const std::string object = first[line].substr(0, tab);
      throw Error(prefix + "the members read different versions of " + object + ": " +
                  name(0) + " read " + version_text(first_version) + ", " + name(r) + " read " +
                  version_text(other_version) +
                  "; it changed while they read the headers, restart the stream");
    }
  }
}

std::string broadcast_failure_message(const std::string& remote_path, const BroadcastGroup& group,
                                      const PlannedRead& read, int owner,
                                      const BroadcastGroup::Outcome& outcome) {
  const std::string prefix = "streaming " + remote_path + " on " +
                             group.member_name(group.rank()) + ": ";
  if (outcome.reported_by >= 0) {
    return prefix + group.member_name(outcome.reported_by) + " failed: " + outcome.failure;
  }
  if (owner == group.rank()) {
    return prefix + "sending " + read_name(read) + " to the other members failed: " +
           outcome.failure;
  }
  return prefix + "receiving " + read_name(read) + " from " + group.member_name(owner) +
         " failed: " + outcome.failure;
}

}  // namespace tensorstream::detail
