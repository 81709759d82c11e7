#pragma once
/// @file
/// The URL schemes tensorstream reads, and how to add one: a scheme says how its URLs are
/// written, opens the stores that serve them, and names the settings common to several schemes
/// (anonymous requests, an endpoint, a region...) that its stores take. file://, http://,
/// https://, s3://, gs://, az:// and hf:// are registered from the start; a program registers its
/// own once, before it streams.

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/store_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// How the text after "scheme://" is read.
enum class UrlForm {
  path,    ///< An absolute path: `file:///data/model.safetensors`.
  server,  ///< `host[:port]/path[?query]`: `https://host:8443/model.safetensors`.
  /// `bucket/key`, no port, the key taken literally ('?' and '%' included), as the clouds' CLIs
  /// take it: `s3://bucket/llama/model.safetensors`. A key not ending in a checkpoint's suffix
  /// (`.safetensors`, `.safetensors.index.json`, `.bin`) names a prefix, as `s3://bucket/llama`.
  bucket,
};

/// Creates the store serving `url`, running its I/O on `executor`, with the caller's options;
/// a registered scheme finds its own with `options.find<ItsOptions>()`.
using StoreOpener = std::function<std::unique_ptr<ObjectStore>(
    const Url& url, boost::asio::any_io_executor executor, const StoreOptions& options)>;

/// A setting that means the same to several schemes, so that a program (the CLI's flags) gives
/// it once, for every scheme that takes it, instead of once per backend's options.
enum class CommonSetting {
  anonymous,  ///< Requests without credentials, for public data (`--no-sign-request`).
  endpoint,   ///< The service's endpoint URL: an emulator, a compatible server (`--endpoint-url`).
  region,     ///< The service's region (`--region`).
  account,    ///< The account whose data a URL names (`--account`).
  profile,    ///< A profile of the service's shared configuration files (`--profile`).
};

/// Values of the common settings; empty or false stands for "not given", so that each store
/// resolves that setting as it would without it.
struct CommonStoreSettings {
  bool anonymous = false;  ///< CommonSetting::anonymous
  std::string endpoint{};  ///< CommonSetting::endpoint
  std::string region{};    ///< CommonSetting::region
  std::string account{};   ///< CommonSetting::account
  std::string profile{};   ///< CommonSetting::profile
};

/// Writes the common settings that are given (non-empty, true) into the scheme's own options in
/// `options`, leaving the rest of them as they are; the settings the scheme does not take arrive
/// unset.
using SettingsApplier =
    std::function<void(const CommonStoreSettings& settings, StoreOptions& options)>;

/// Whether `url`, of another scheme, names data this scheme's stores serve better than that
/// scheme's would (az:// claims https URLs of Azure's blob endpoints, whose listings and
/// credentials plain https lacks), given the caller's options.
using UrlClaim = std::function<bool(const Url& url, const StoreOptions& options)>;

/// One URL scheme.
struct Scheme {
  /// Lowercase ASCII letters, digits, '+', '-' and '.', starting with a letter: "s3".
  std::string name;
  UrlForm form = UrlForm::bucket;  ///< How its URLs are written.
  std::uint16_t default_port = 0;  ///< UrlForm::server: the port of a URL that names none.
  StoreOpener open;                ///< Creates its stores.
  /// The common settings its stores take; apply_common_settings() gives it these only.
  std::vector<CommonSetting> takes{};
  SettingsApplier apply{};  ///< Receives the settings in `takes`; needed when `takes` has any.
  /// Optional: URLs of other schemes that `open` serves; open_store() asks it first.
  UrlClaim claims{};
};

/// Adds `scheme`: from then on Url::parse(), open_store(), every stream, the CLI's commands and
/// the Python package accept its URLs. Thread-safe; a program calls it once per scheme at start.
/// @throws InvalidArgument when the name is malformed or taken (the built-in ones included),
///   `open` is empty, or `takes` names settings without an `apply` to receive them.
TENSORSTREAM_API void register_scheme(Scheme scheme);

/// The registered scheme called `name` (lowercase), or nullptr. Thread-safe.
TENSORSTREAM_API std::shared_ptr<const Scheme> find_scheme(std::string_view name);

/// The scheme whose opener serves `url` with `options`: the first registered scheme whose
/// `claims` takes it, else the one `url.scheme` names; nullptr when that is not registered.
/// open_store() opens what it finds. Thread-safe.
TENSORSTREAM_API std::shared_ptr<const Scheme> find_scheme_serving(const Url& url,
                                                                   const StoreOptions& options);

/// Gives `settings` to every registered scheme that takes any of the given ones, each through its
/// `apply` and with only the settings it takes: what the CLI's `--endpoint-url` and the like do,
/// without naming a backend. A scheme may set the process's environment (s3:// names a profile
/// as AWS_PROFILE), so a program applies settings before it starts other threads.
TENSORSTREAM_API void apply_common_settings(const CommonStoreSettings& settings,
                                            StoreOptions& options);

/// The names of the registered schemes that take `setting`, in the order they were registered:
/// for help texts that say where a setting goes. Thread-safe.
TENSORSTREAM_API std::vector<std::string> schemes_taking(CommonSetting setting);

/// The names of the registered schemes in the order they were registered, the built-in ones
/// first: file, http, https, s3, gs, az, hf.
TENSORSTREAM_API std::vector<std::string> scheme_names();

}  // namespace tensorstream
