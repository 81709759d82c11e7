#pragma once
/// @file
/// A worker's view of one rank a store server serves: the manifest of its attach reply and the
/// regions mapped into this process, without a copy.

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tensorstream/export.hpp"
#include "tensorstream/store/client.hpp"
#include "tensorstream/store/manifest.hpp"

namespace tensorstream::store {

/// How attach() asks for a rank and maps it.
struct AttachOptions {
  /// How long the server may wait for the rank to finish loading; the request as a whole may take
  /// 10 s more (connecting, transferring the reply).
  std::chrono::milliseconds timeout{60'000};
  /// Maps read-only regions (the weights) MAP_PRIVATE with PROT_READ | PROT_WRITE instead of
  /// PROT_READ, MAP_SHARED: writes then go to private copy-on-write pages of this process, which
  /// neither the server nor other workers see. For callers that must write into weights.
  bool private_weights = false;
  /// The longest reply accepted.
  std::size_t max_reply_bytes = default_max_reply_bytes;
  /// The uid the server runs as, where it is neither this process's nor root (see request()).
  std::optional<uid_t> server_uid{};
};

namespace detail {
struct AttachedState;
}  // namespace detail

/// The regions of one rank, mapped: read-only regions PROT_READ, MAP_SHARED (unless
/// AttachOptions::private_weights), writable ones PROT_READ | PROT_WRITE, MAP_SHARED, so that
/// writes to the KV cache are the server's memory. The descriptors are closed once mapped.
///
/// The manifest and the mappings live in a shared state: copies of an AttachedRank share them,
/// and keep_alive() hands out a reference that keeps every view (bytes(), writable_bytes(),
/// tensors made over them) valid after the last AttachedRank is gone. The memory stays valid
/// after the server exits.
class TENSORSTREAM_API AttachedRank {
 public:
  /// Maps the regions of an attach reply. `where` (the socket path) names the source in errors.
  /// The reply's descriptors are closed whether this succeeds or throws.
  /// @throws FormatError for a reply that is not a valid manifest, a descriptor count that does
  ///   not match its regions, or a descriptor smaller than its region; StorageError when a
  ///   region cannot be mapped.
  AttachedRank(ReceivedReply reply, std::string_view where, bool private_weights = false);

  /// The rank's manifest.
  const Manifest& manifest() const noexcept;

  /// The socket path (or whatever `where` was given).
  const std::string& where() const noexcept;

  /// The tensor called `name`, or nullptr.
  const TensorEntry* find(std::string_view name) const;

  /// The bytes of `entry` (one of manifest().tensors), valid while this or keep_alive() lives.
  /// @throws InvalidArgument when `entry` names a region the manifest does not have or lies
  ///   outside it.
  std::span<const std::byte> bytes(const TensorEntry& entry) const;

  /// bytes() for writing: `entry` must lie in a writable region (or in any region when mapped
  /// with private_weights).
  /// @throws InvalidArgument for a tensor of a read-only mapping.
  std::span<std::byte> writable_bytes(const TensorEntry& entry) const;

  /// Whether `entry`'s mapping may be written.
  bool is_writable(const TensorEntry& entry) const;

  /// Keeps the manifest and every mapping alive while held (for deleters of views).
  std::shared_ptr<const void> keep_alive() const noexcept;

 private:
  std::shared_ptr<detail::AttachedState> state_;
};

/// Attaches to `rank` of the server at `socket_path`: request(attach_request(rank, timeout))
/// then AttachedRank. Blocks the calling thread. A server that is not there yet (no socket
/// file, nobody listening) or turns the connection away (too many) is asked again, at growing
/// intervals up to 200 ms, until `options.timeout` has passed; the time spent so comes off the
/// wait for the rank to load.
/// @throws ServerUnavailable when no server took the request within the timeout, saying how long
///   it waited; what request() throws otherwise (the server's error reply as its exception, ...)
///   and what AttachedRank's constructor throws.
TENSORSTREAM_API
AttachedRank attach(const std::filesystem::path& socket_path, std::uint32_t rank,
                    const AttachOptions& options = {});

/// attach() as a coroutine (async_request): suspends instead of blocking, also between tries.
TENSORSTREAM_API
boost::asio::awaitable<AttachedRank> async_attach(std::filesystem::path socket_path,
                                                  std::uint32_t rank, AttachOptions options = {});

}  // namespace tensorstream::store
