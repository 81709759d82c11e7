#include "distributed/rendezvous_address.hpp"

#include <charconv>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {

RendezvousAddress parse_rendezvous(const std::string& rendezvous) {
  const auto invalid = [&](const std::string& why) {
    return InvalidArgument("rendezvous '" + rendezvous + "' " + why +
                           " (expected tcp://HOST:PORT)");
  };
  const std::string scheme = "tcp://";
  if (rendezvous.rfind(scheme, 0) != 0) throw invalid("is not a tcp:// address");
  const std::string rest = rendezvous.substr(scheme.size());
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos) throw invalid("has no port");
  if (colon == 0) throw invalid("has no host");
  RendezvousAddress address;
  address.host = rest.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string port = rest.substr(colon + 1);
  unsigned int value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    throw invalid("has no port in [1, 65535]");
  }
  address.port = static_cast<unsigned short>(value);
  return address;
}

void check_distributed_options(const DistributedOptions& options) {
  if (options.group) return;
  if (options.world_size < 1) {
    throw InvalidArgument("world_size must be at least 1, not " +
                          std::to_string(options.world_size));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    throw InvalidArgument("rank " + std::to_string(options.rank) + " is outside the world [0, " +
                          std::to_string(options.world_size) + ")");
  }
  if (options.timeout.count() <= 0) {
    throw InvalidArgument("the group timeout must be positive, not " +
                          std::to_string(options.timeout.count()) + " ms");
  }
  if (options.world_size > 1 && options.rendezvous.empty()) {
    throw InvalidArgument("a world of " + std::to_string(options.world_size) +
                          " processes needs a rendezvous address (tcp://HOST:PORT) or a group");
  }
  if (options.world_size > 1) parse_rendezvous(options.rendezvous);
}

}  // namespace tensorstream::detail
