#pragma once
/// @file
/// The URL schemes tensorstream reads, and how to add one: a scheme says how its URLs are
/// written and opens the stores that serve them. file://, http://, https://, s3://, gs://, az://
/// and hf:// are registered from the start; a program registers its own once, before it streams.

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

/// One URL scheme.
struct Scheme {
  /// Lowercase ASCII letters, digits, '+', '-' and '.', starting with a letter: "s3".
  std::string name;
  UrlForm form = UrlForm::bucket;  ///< How its URLs are written.
  std::uint16_t default_port = 0;  ///< UrlForm::server: the port of a URL that names none.
  StoreOpener open;                ///< Creates its stores.
};

/// Adds `scheme`: from then on Url::parse(), open_store(), every stream, the CLI's commands and
/// the Python package accept its URLs. Thread-safe; a program calls it once per scheme at start.
/// @throws InvalidArgument when the name is malformed or taken (the built-in ones included), or
///   `open` is empty.
TENSORSTREAM_API void register_scheme(Scheme scheme);

/// The registered scheme called `name` (lowercase), or nullptr. Thread-safe.
TENSORSTREAM_API std::shared_ptr<const Scheme> find_scheme(std::string_view name);

/// The names of the registered schemes in the order they were registered, the built-in ones
/// first: file, http, https, s3, gs, az, hf.
TENSORSTREAM_API std::vector<std::string> scheme_names();

}  // namespace tensorstream
