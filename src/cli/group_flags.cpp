#include "cli/group_flags.hpp"

#include <chrono>
#include <cstdint>

#include "cli/number_checks.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::cli {

void add_group_flags(CLI::App& command, GroupFlags& flags) {
  command
      .add_option("--world-size", flags.world_size,
                  "Processes reading the checkpoint together: each reads a share from the store "
                  "and broadcasts it to the others (needs --rendezvous)")
      ->capture_default_str()
      ->check(positive_number);
  command.add_option("--rendezvous", flags.rendezvous,
                     "tcp://HOST:PORT where rank 0 serves the group's rendezvous");
  command
      .add_option("--group-timeout", flags.timeout_seconds,
                  "Seconds to wait for the other processes: at the rendezvous and for each "
                  "broadcast (default: 300)")
      ->check(positive_number);
}

DistributedOptions distributed_options(const GroupFlags& flags, int rank) {
  DistributedOptions options;
  if (flags.world_size <= 1) {
    if (!flags.rendezvous.empty()) throw InvalidArgument("--rendezvous needs --world-size above 1");
    if (flags.timeout_seconds) throw InvalidArgument("--group-timeout needs --world-size above 1");
    return options;
  }
  if (flags.rendezvous.empty()) {
    throw InvalidArgument("--world-size " + std::to_string(flags.world_size) +
                          " needs --rendezvous tcp://HOST:PORT");
  }
  options.world_size = flags.world_size;
  options.rank = rank;
  options.rendezvous = flags.rendezvous;
  if (flags.timeout_seconds) {
    options.timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(*flags.timeout_seconds * 1000));
  }
  return options;
}

}  // namespace tensorstream::cli
