#pragma once
/// @file
/// The collective operations a distributed stream needs from the processes it runs in.

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace tensorstream {

/// The processes that stream one checkpoint together: each tensor is read by one of them and
/// broadcast to the others. Implemented over PyTorch's c10d (tensorstream/distributed/
/// c10d_group.hpp, and join_group() for a group made from a rendezvous); the streams use it only
/// through this interface, so the libraries without libtorch can drive one.
///
/// Collectives match by order: every member must start the same broadcasts and gathers in the
/// same order. A stream's schedule guarantees that for its own operations; two streams must not
/// share one group at the same time.
class BroadcastGroup {
 public:
  /// How a broadcast ended on this rank.
  struct Outcome {
    /// Whether this rank's part completed: the root's bytes sent, a receiver's landed.
    bool ok = true;
    /// Why it did not: a lost peer, the timeout, or what another member reported.
    std::string failure;
    /// The member whose report_failure() message `failure` is, or -1 when this rank saw the
    /// failure itself.
    int reported_by = -1;
  };
  /// Called once when a broadcast ends.
  using Completion = std::function<void(Outcome)>;

  virtual ~BroadcastGroup() = default;

  /// This process's rank in the group, in [0, size()).
  virtual int rank() const = 0;
  /// How many processes the group has.
  virtual int size() const = 0;
  /// How messages name member `rank`: "rank 3", where a rendezvous made the group, names the
  /// process's rank in the world rather than in the group.
  virtual std::string member_name(int rank) const { return "rank " + std::to_string(rank); }

  /// Starts sending `bytes` from rank `root` to every other rank, landing in place in the
  /// `bytes` each of them passes (of the same length). Returns at once; `done` runs once, on a
  /// thread of the group's, when this rank's part is over, or failed: by a lost peer, the
  /// group's timeout, or a failure another rank reported (see report_failure()). A reported
  /// failure may end a broadcast whose transfer is still under way, so the group keeps `done`
  /// until its work on `bytes` has ended, which can be after `done` ran: `bytes` must stay valid
  /// as long as `done` exists, for which `done` may hold what owns them.
  virtual void broadcast(std::span<std::byte> bytes, int root, Completion done) = 0;

  /// Every member's `mine`, in rank order. Blocks until all have given theirs, or throws when the
  /// group's timeout passes first or a peer is lost.
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;

  /// Tells the other members that this one failed and why, so that their pending and later
  /// broadcasts fail with `message` (and reported_by this rank) instead of waiting for the
  /// timeout. Best effort: a group with no channel
  /// besides its collectives (one made from a caller's process group) ignores it, and the others
  /// learn of the failure from a lost connection or the timeout.
  virtual void report_failure(const std::string& message) = 0;
};

}  // namespace tensorstream
