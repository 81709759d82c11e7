#pragma once
/// @file
/// How a stream joins the processes that load one checkpoint together.

#include <chrono>
#include <memory>
#include <string>

#include "tensorstream/distributed/broadcast_group.hpp"
#include "tensorstream/export.hpp"

namespace tensorstream {

/// StreamerOptions::distributed: read once, broadcast to all. With a group of more than one
/// process, each selected tensor is read from the store by one member (owners are assigned by
/// bytes, so each reads about 1/N of the checkpoint) and broadcast from it to the others; every
/// member yields every tensor. Left at its defaults, the stream reads everything itself.
///
/// The group is either `group`, one the caller made (c10d_group() wraps a c10d process group),
/// or one the stream makes from `rendezvous`, `world_size` and `rank`: a c10d TCPStore served by
/// rank 0 at the rendezvous address and a Gloo process group over it, as
/// `torch.distributed.init_process_group("gloo", init_method=...)` would make. Members that
/// need the same files (the same tensor_parallel_size and rank in StreamerOptions) form one
/// group of their own, so a world of data-parallel replicas of a tensor-parallel model reads each
/// rank's files once.
struct DistributedOptions {
  /// A group to use; takes precedence over the rendezvous below.
  std::shared_ptr<BroadcastGroup> group;
  /// `tcp://host:port` where rank 0 serves the rendezvous store; empty for no rendezvous.
  std::string rendezvous;
  /// Processes in the world, at least 1; 1 streams exactly as without a group.
  int world_size = 1;
  /// This process's rank in the world, in [0, world_size).
  int rank = 0;
  /// Bound on every wait for the other members: the rendezvous, each broadcast, each gather. A
  /// broadcast's receivers wait for its owner's read, so this must exceed the time to read the
  /// largest tensor; a member that stops consuming for longer fails the group. Destroying a
  /// stream while it waits at the rendezvous or for the others' plans waits for that to end.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);

  /// Whether these options make the stream distributed: a group of more than one member, or a
  /// world of more than one process.
  bool enabled() const { return group ? group->size() > 1 : world_size > 1; }
};

/// Makes the group a stream described by `options` joins from its rendezvous: connects to rank
/// 0's TCPStore at `options.rendezvous` (rank 0 serves it), publishes `member` (what this process
/// streams, compared across members) under `group_key` (members with the same key form one group),
/// waits up to `options.timeout` for every rank of the world, and builds a Gloo process group of
/// the members sharing its key. Throws InvalidArgument for a bad address, world size or rank, and
/// Error naming the ranks when members disagree, when the rendezvous times out, or when this
/// build cannot load the c10d plugin (libtensorstream_c10d.so, built with libtorch).
TENSORSTREAM_API
std::shared_ptr<BroadcastGroup> join_group(const DistributedOptions& options,
                                           const std::string& group_key,
                                           const std::string& member);

}  // namespace tensorstream
