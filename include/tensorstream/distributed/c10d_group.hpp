#pragma once
/// @file
/// A BroadcastGroup over a PyTorch c10d process group (link tensorstream::c10d).

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <memory>

#include "tensorstream/distributed/broadcast_group.hpp"
#include "tensorstream/export.hpp"

namespace tensorstream {

/// Wraps `group`, a process group of the caller's (Gloo on CPU; NCCL moves CPU tensors only
/// through a CUDA copy, so a Gloo group is the one to give), for StreamerOptions::distributed.
/// The stream issues its broadcasts on it with `timeout` each. A group made this way has no
/// channel to report failures on besides its collectives: a member that fails is noticed by the
/// others when its connections close or the timeout passes.
TENSORSTREAM_API
std::shared_ptr<BroadcastGroup> c10d_group(c10::intrusive_ptr<c10d::ProcessGroup> group,
                                           std::chrono::milliseconds timeout);

}  // namespace tensorstream
