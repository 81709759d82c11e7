#pragma once

#include <string>

#include "tensorstream/distributed/distributed_options.hpp"

namespace tensorstream::detail {

/// Where rank 0 serves a rendezvous: `tcp://HOST:PORT` (an IPv6 host in brackets).
struct RendezvousAddress {
  std::string host;
  unsigned short port = 0;
};

/// Parses `rendezvous`; InvalidArgument quoting it when it is not `tcp://HOST:PORT`.
RendezvousAddress parse_rendezvous(const std::string& rendezvous);

/// InvalidArgument naming the field when `options` (without a group of the caller's) cannot
/// make a group: a world size below 1, a rank outside it, a timeout that is not positive, or a
/// world of more than one without a valid rendezvous address.
void check_distributed_options(const DistributedOptions& options);

}  // namespace tensorstream::detail
