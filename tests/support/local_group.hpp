#pragma once
// BroadcastGroups of members in one process, for testing distributed streams without c10d.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/distributed/broadcast_group.hpp"

namespace tensorstream::testing {

/// The members of one group, each a BroadcastGroup for a stream of the test's. Collectives match
/// by order, as c10d's do: a broadcast completes, on the thread of the member that starts it
/// last, once every member has started it. report_failure() fails every pending and later
/// collective with the message; lose() plays a member that is gone.
class LocalGroup {
 public:
  /// What a failure does to the broadcasts pending at the time.
  enum class Failures {
    /// Their work ends with their completions.
    end_the_work,
    /// Their completions run at once with the failure, as c10d's reports end them, while their
    /// work goes on, as Gloo's does: it lands in the members' memory at land_late(), and each
    /// completion (with whatever it keeps alive) is kept until then.
    complete_early,
  };

  explicit LocalGroup(int size, Failures failures = Failures::end_the_work);

  /// With Failures::complete_early: the work of the broadcasts a failure completed lands now,
  /// bytes of 0xee in every receiver's memory; then their completions go.
  void land_late();

  /// Member `rank`'s side of the group.
  std::shared_ptr<BroadcastGroup> member(int rank);

  /// Member `rank` is gone: the others' pending and later collectives fail, as their lost
  /// connections would make them.
  void lose(int rank);

  /// Broadcasts completed so far (counted once per collective, not per member).
  std::uint64_t broadcasts() const;

  /// Blocks until member `rank` has started a broadcast that some other member has not.
  void wait_pending(int rank);

 private:
  class Member;
  using Outcome = BroadcastGroup::Outcome;

  struct Broadcast {
    int root = -1;
    std::size_t length = 0;
    std::vector<std::span<std::byte>> buffers;
    std::vector<BroadcastGroup::Completion> done;
    int started = 0;
  };
  struct Gather {
    std::vector<std::optional<std::string>> values;
    int given = 0;
  };

  void broadcast(int rank, std::span<std::byte> bytes, int root, BroadcastGroup::Completion done);
  std::vector<std::string> all_gather(int rank, const std::string& mine);
  void report_failure(int rank, const std::string& message);
  // Fails every pending broadcast with `outcome`, which every later one gets too.
  void fail_locked(std::unique_lock<std::mutex>& lock, Outcome outcome);

  const int size_;
  const Failures failures_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::uint64_t> next_broadcast_;
  std::vector<std::uint64_t> next_gather_;
  std::map<std::uint64_t, Broadcast> broadcasts_;
  std::map<std::uint64_t, Gather> gathers_;
  std::vector<Broadcast> landing_;  // Failures::complete_early: completed, work still to land.
  std::uint64_t completed_ = 0;
  std::optional<Outcome> failure_;
};

}  // namespace tensorstream::testing
