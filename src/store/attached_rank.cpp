#include "tensorstream/store/attached_rank.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {

namespace detail {

struct Mapping {
  std::byte* data = nullptr;  // nullptr for an empty region: mmap refuses a length of 0.
  std::size_t size = 0;
  bool writable = false;
};

struct AttachedState {
  std::string where;
  Manifest manifest;
  std::vector<Mapping> mappings;  // In manifest.regions order.
  std::unordered_map<std::string_view, const TensorEntry*> tensors;
  std::unordered_map<std::string_view, std::size_t> regions;

  AttachedState() = default;
  AttachedState(const AttachedState&) = delete;
  AttachedState& operator=(const AttachedState&) = delete;
  ~AttachedState() {
    for (const auto& mapping : mappings) {
      if (mapping.data != nullptr) ::munmap(mapping.data, mapping.size);
    }
  }
};

}  // namespace detail

namespace {

// The mapping `entry` lies in, checked: an entry need not come from this manifest.
const detail::Mapping& mapping_of(const detail::AttachedState& state, const TensorEntry& entry) {
  const auto region = state.regions.find(entry.region);
  if (region == state.regions.end()) {
    throw InvalidArgument(state.where + ": tensor " + json_string(entry.name) +
                          " names region " + json_string(entry.region) +
                          ", which the manifest does not have");
  }
  const auto& mapping = state.mappings[region->second];
  if (entry.bytes > mapping.size || entry.offset > mapping.size - entry.bytes) {
    throw InvalidArgument(state.where + ": tensor " + json_string(entry.name) +
                          " lies outside region " + json_string(entry.region));
  }
  return mapping;
}

// Refuses a region whose descriptor a holder could still change under this process: a store
// server seals the weights against every change and the KV cache against resizing, so memory
// without those seals comes from something else answering on the socket.
void check_seals(const std::string& where, const RegionInfo& region, int fd) {
  const int needed = region.writable ? F_SEAL_SHRINK | F_SEAL_GROW
                                     : F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals >= 0 && (seals & needed) == needed) return;
  throw StorageError(where,
                     "refusing region " + json_string(region.name) + ": its memory is not sealed " +
                         (region.writable ? "against resizing" : "read-only") +
                         " as a store server's is, so whoever answered on this socket could "
                         "change it under this process",
                     false, ErrorKind::access_denied);
}

}  // namespace

AttachedRank::AttachedRank(ReceivedReply reply, std::string_view where, bool private_weights)
    : state_(std::make_shared<detail::AttachedState>()) {
  auto& state = *state_;
  state.where = std::string(where);
  state.manifest = parse_manifest(reply.json, where);
  const auto& regions = state.manifest.regions;
  if (reply.fds.size() != regions.size()) {
    throw FormatError(state.where + ": the reply passed " + std::to_string(reply.fds.size()) +
                      " descriptors for " + std::to_string(regions.size()) + " regions");
  }
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const auto& region = regions[i];
    const int fd = reply.fds[region.fd_index].get();
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
      throw StorageError(state.where,
                         "fstat of region " + json_string(region.name) + " failed: " +
                             std::strerror(errno));
    }
    check_seals(state.where, region, fd);
    if (static_cast<std::uint64_t>(status.st_size) < region.bytes) {
      throw FormatError(state.where + ": region " + json_string(region.name) + " has " +
                        std::to_string(status.st_size) + " bytes, the manifest says " +
                        std::to_string(region.bytes));
    }
    detail::Mapping mapping;
    mapping.size = region.bytes;
    mapping.writable = region.writable || private_weights;
    if (region.bytes > 0) {
      const int flags = region.writable || !private_weights ? MAP_SHARED : MAP_PRIVATE;
      const int protection = mapping.writable ? PROT_READ | PROT_WRITE : PROT_READ;
      void* memory = ::mmap(nullptr, region.bytes, protection, flags, fd, 0);
      if (memory == MAP_FAILED) {
        throw StorageError(state.where, "cannot map region " + json_string(region.name) +
                                            " (" + std::to_string(region.bytes) +
                                            " bytes): " + std::strerror(errno));
      }
      mapping.data = static_cast<std::byte*>(memory);
    }
    state.mappings.push_back(mapping);
    state.regions.emplace(region.name, i);
  }
  // The mappings keep the memory; the descriptors are of no further use.
  reply.fds.clear();
  for (const auto& tensor : state.manifest.tensors) state.tensors.emplace(tensor.name, &tensor);
}

const Manifest& AttachedRank::manifest() const noexcept { return state_->manifest; }

const std::string& AttachedRank::where() const noexcept { return state_->where; }

const TensorEntry* AttachedRank::find(std::string_view name) const {
  const auto found = state_->tensors.find(name);
  return found == state_->tensors.end() ? nullptr : found->second;
}

std::span<const std::byte> AttachedRank::bytes(const TensorEntry& entry) const {
  const auto& mapping = mapping_of(*state_, entry);
  if (entry.bytes == 0) return {};
  return {mapping.data + entry.offset, entry.bytes};
}

std::span<std::byte> AttachedRank::writable_bytes(const TensorEntry& entry) const {
  const auto& mapping = mapping_of(*state_, entry);
  if (!mapping.writable) {
    throw InvalidArgument(state_->where + ": tensor " + json_string(entry.name) +
                          " lies in read-only region " + json_string(entry.region));
  }
  if (entry.bytes == 0) return {};
  return {mapping.data + entry.offset, entry.bytes};
}

bool AttachedRank::is_writable(const TensorEntry& entry) const {
  return mapping_of(*state_, entry).writable;
}

std::shared_ptr<const void> AttachedRank::keep_alive() const noexcept { return state_; }

namespace {

using AttachClock = std::chrono::steady_clock;

constexpr std::chrono::seconds transfer_margin{10};
constexpr std::chrono::milliseconds first_pause{5};
constexpr std::chrono::milliseconds longest_pause{200};

// The tries of one attach: how long each may let the server wait for the rank, and how long to
// pause after a server that was not there or too busy.
class Tries {
 public:
  Tries(std::string where, std::chrono::milliseconds timeout)
      : where_(std::move(where)), timeout_(timeout), deadline_(AttachClock::now() + timeout) {}

  // What is left of the timeout, for the next request.
  std::chrono::milliseconds left() const {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::ceil<std::chrono::milliseconds>(deadline_ - AttachClock::now()));
  }

  // The pause before trying again after `error`; rethrows it, saying how long this attach
  // waited, when the pause would end past the timeout.
  std::chrono::milliseconds pause_after(const ServerUnavailable& error) {
    const std::chrono::milliseconds pause = pause_;
    pause_ = std::min(pause_ * 2, longest_pause);
    if (AttachClock::now() + pause <= deadline_) return pause;
    if (timeout_.count() == 0) throw error;
    throw ServerUnavailable(where_, error.cause() + "; gave up after waiting " +
                                        std::to_string(timeout_.count()) + " ms");
  }

 private:
  const std::string where_;
  const std::chrono::milliseconds timeout_;
  const AttachClock::time_point deadline_;
  std::chrono::milliseconds pause_ = first_pause;
};

}  // namespace

AttachedRank attach(const std::filesystem::path& socket_path, std::uint32_t rank,
                    const AttachOptions& options) {
  Tries tries(socket_path.string(), options.timeout);
  for (;;) {
    try {
      const std::chrono::milliseconds left = tries.left();
      ReceivedReply reply = request(socket_path, attach_request(rank, left),
                                    left + transfer_margin, options.max_reply_bytes,
                                    options.server_uid);
      return AttachedRank(std::move(reply), socket_path.string(), options.private_weights);
    } catch (const ServerUnavailable& error) {
      std::this_thread::sleep_for(tries.pause_after(error));
    }
  }
}

boost::asio::awaitable<AttachedRank> async_attach(std::filesystem::path socket_path,
                                                  std::uint32_t rank, AttachOptions options) {
  const std::string where = socket_path.string();
  Tries tries(where, options.timeout);
  for (;;) {
    std::chrono::milliseconds pause{0};
    try {
      const std::chrono::milliseconds left = tries.left();
      std::string request_json = attach_request(rank, left);
      ReceivedReply reply = co_await async_request(socket_path, std::move(request_json),
                                                   left + transfer_margin,
                                                   options.max_reply_bytes, options.server_uid);
      co_return AttachedRank(std::move(reply), where, options.private_weights);
    } catch (const ServerUnavailable& error) {
      pause = tries.pause_after(error);
    }
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, pause);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

}  // namespace tensorstream::store
