#pragma once
/// @file
/// Parsing of the object URLs tensorstream accepts: file://, plain paths, http(s)://, s3://, gs://,
/// az:// and the schemes a program registers (scheme.hpp).

#include <cstdint>
#include <string>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// A parsed object URL.
///
/// `file:///data/m.safetensors` and `/data/m.safetensors` both give scheme "file" and path
/// "/data/m.safetensors". `https://host:8443/a/b` gives host "host", port 8443, path "/a/b".
/// `s3://bucket/prefix/` gives host "bucket", path "/prefix/"; s3, gs, az and hf paths are object
/// keys taken literally, so they keep any `?` or `%` and have no query. A registered scheme's URLs
/// are read as its UrlForm says.
struct TENSORSTREAM_API Url {
  std::string scheme;       ///< A registered scheme's name: "file", "http", "https", "s3", "gs"...
  std::string host;         ///< Host name or bucket; empty for file.
  std::uint16_t port = 0;   ///< Explicit or default port (80, 443); 0 for paths and buckets.
  std::string path;         ///< Starts with '/'; percent-encoding kept as written.
  std::string query;        ///< After '?', without it; empty if none.

  /// Parses `text`. Throws InvalidArgument naming the URL for a scheme nobody registered, a
  /// missing host, or a bad port.
  static Url parse(std::string_view text);

  /// Whether the path names a directory-like prefix (ends with '/').
  bool is_prefix() const { return !path.empty() && path.back() == '/'; }

  /// "scheme://host[:port]" for network URLs, "scheme://" for paths ("file://").
  std::string origin() const;

  /// The URL as messages and logs show it: the default port omitted, and a query shown as `?…`,
  /// since it may hold a signature (presigned S3 and GCS URLs, Azure SAS tokens, signed CDN
  /// links) that must not end up in logs.
  std::string str() const;

  /// The whole URL, query included, for requests; never for messages.
  std::string str_with_query() const;
};

/// `url` as messages and logs may show it: for a URL of a server scheme (http, https), whatever
/// follows its first '?' is shown as `…` (see Url::str()); anything else, paths and bucket keys
/// (which may hold '?') included, comes back unchanged. For text that is not parsed, e.g. a
/// redirect's Location or the URL a user typed.
TENSORSTREAM_API
std::string redact_query(std::string_view url);

}  // namespace tensorstream
