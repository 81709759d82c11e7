#pragma once
// The flags every command that reads object storage takes: credentials, region, endpoint, trust,
// and the HTTP client's retries and timeouts.

#include <CLI/App.hpp>
#include <optional>
#include <string>

#include "tensorstream/storage/store_options.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::cli {

/// What the storage flags say; empty or false means "as the environment says". The first five
/// are common settings (CommonStoreSettings), which go to every scheme that takes them.
struct StoreFlags {
  bool no_sign_request = false;  ///< Anonymous requests, for public data.
  std::string profile;           ///< Profile of the service's shared files.
  std::string region;            ///< The service's region.
  std::string endpoint_url;      ///< The service's endpoint: a compatible server, an emulator.
  std::string account;           ///< Storage account.
  std::string ca_bundle;         ///< PEM file of trusted CAs for https.
  bool insecure = false;         ///< Do not verify TLS certificates.
  std::optional<int> retries;    ///< Attempts after the first for transient failures.
  std::optional<double> connect_timeout;  ///< Seconds to resolve, connect and handshake.
  std::optional<double> response_timeout;  ///< Seconds to wait for a response header.
  std::optional<double> read_timeout;  ///< Seconds a body may go without a byte.
  /// The old name of --read-timeout, accepted with a warning.
  std::optional<double> timeout;
  std::string direct_io;  ///< auto, on or off: when files are read past the page cache.
  std::optional<std::string> cache;       ///< --cache DIR; "" turns the cache off.
  std::optional<std::string> cache_size;  ///< --cache-size SIZE
  std::optional<std::string> cache_mode;  ///< --cache-mode readwrite|read|offline|off
  std::optional<std::string> cache_min_free;  ///< --cache-min-free SIZE or N%
};

/// How a command that rewrites a checkpoint (shard, partition) reads its source.
struct SourceReadFlags {
  /// --chunk-size; unset: TENSORSTREAM_CHUNK_SIZE, else the stream's default (which the
  /// store may raise: ObjectStore::preferred_read_size()).
  std::optional<std::string> chunk_size;
  std::size_t concurrency = 32;        ///< --concurrency
  std::string memory_limit = "512MiB";  ///< --memory-limit
};

/// Adds --chunk-size, --concurrency and --memory-limit (described by `memory_help`) to `command`.
void add_source_read_flags(CLI::App& command, SourceReadFlags& flags,
                           const std::string& memory_help);

/// `options` reading as `flags` say, with the store options `store` gives.
StreamerOptions apply_source_read_flags(const SourceReadFlags& flags, const StoreFlags& store,
                                        StreamerOptions options = {});

/// Adds --no-sign-request, --region, --endpoint-url, --account, --ca-bundle, --insecure,
/// --retries, --connect-timeout, --timeout and --direct-io to `command`, storing into `flags`
/// (which must outlive parsing).
void add_store_flags(CLI::App& command, StoreFlags& flags);

/// `options` with what `flags` set, the common settings given to the registered schemes that take
/// them (apply_common_settings()). Warns on stderr that certificates are not verified when
/// --insecure is given.
StoreOptions apply_store_flags(const StoreFlags& flags, StoreOptions options = {});

}  // namespace tensorstream::cli
