#pragma once
// --world-size, --rendezvous and --group-timeout: the processes a command (stream, serve) reads
// a checkpoint together with, each reading a share and receiving the rest (see
// DistributedOptions). The command's own --rank is the process's rank in that world.

#include <CLI/App.hpp>
#include <optional>
#include <string>

#include "tensorstream/distributed/distributed_options.hpp"

namespace tensorstream::cli {

/// What the flags say.
struct GroupFlags {
  int world_size = 1;
  std::string rendezvous;
  std::optional<double> timeout_seconds;
};

/// Adds the three flags to `command`, storing into `flags`.
void add_group_flags(CLI::App& command, GroupFlags& flags);

/// The options for a process of rank `rank`: InvalidArgument when a world of more than one has
/// no --rendezvous, or a world of one (the default: the command reads everything itself) has
/// --rendezvous or --group-timeout, which would do nothing. `rank` is checked by the stream.
DistributedOptions distributed_options(const GroupFlags& flags, int rank);

}  // namespace tensorstream::cli
