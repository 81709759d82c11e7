#pragma once
/// @file
/// Tuning of the HTTP range client shared by the http(s), s3 and gs backends.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// The proxies of an HTTP client, in the forms curl takes from http_proxy, https_proxy and
/// no_proxy.
struct ProxyOptions {
  /// Proxy of http:// URLs, "[http://][user:password@]host[:port]" (port 1080 by default, as
  /// curl's); requests go to it with absolute URLs. Empty: none.
  std::string http{};
  /// Proxy of https:// URLs, in the same form; TLS runs inside a `CONNECT host:port` tunnel.
  std::string https{};
  /// Comma-separated hosts reached directly: a name also covers its subdomains (a leading dot
  /// is ignored), an entry may end in ":port" to cover that port only, and "*" covers all.
  /// Loopback addresses go through the proxy unless listed.
  std::string no_proxy{};
};

/// Options of the HTTP range client. The retry defaults follow the AWS SDKs' standard mode
/// (base 100 ms, throttling base 1 s, cap 20 s), with more attempts because a stream of many
/// gigabytes is worth more patience than one API call.
struct TENSORSTREAM_API HttpOptions {
  /// The most connections open to one host at a time; requests beyond it wait for one to be
  /// free rather than open more sockets.
  static constexpr std::size_t max_connections_limit = 256;
  /// response_timeout where neither the options nor the environment set it.
  static constexpr std::chrono::milliseconds default_response_timeout{10'000};

  /// Limit for resolving and connecting (TCP and TLS handshake together).
  std::chrono::milliseconds connect_timeout{10'000};
  /// Limit for the response header to arrive once a request was sent: a server that accepts
  /// connections but does not answer is retried after this, not after read_timeout. Unset:
  /// TENSORSTREAM_RESPONSE_TIMEOUT (seconds, e.g. "2.5"), else default_response_timeout; read
  /// when the client is made.
  std::optional<std::chrono::milliseconds> response_timeout{};
  /// A response whose body delivers no byte for this long is abandoned and the request retried.
  std::chrono::milliseconds read_timeout{30'000};
  /// Attempts after the first for transient failures (resets, timeouts, 5xx, truncated bodies).
  int max_retries = 9;
  /// Cap of the first backoff delay; each retry doubles the cap, and the delay is drawn
  /// uniformly below it ("full jitter").
  std::chrono::milliseconds retry_base_delay{100};
  /// Cap of the first backoff delay after a throttling answer (429, 503 such as S3's SlowDown):
  /// the server asked for less load, so clients back off further.
  std::chrono::milliseconds throttle_base_delay{1'000};
  /// Upper bound of one backoff delay.
  std::chrono::milliseconds retry_max_delay{20'000};
  /// Connections per host; at most max_connections_limit, and at least 1.
  std::size_t max_connections = max_connections_limit;
  /// Idle keep-alive connections kept per host.
  std::size_t max_idle_connections = 64;
  /// PEM file of trusted CAs; empty means the system store (which honours SSL_CERT_FILE).
  std::string ca_file;
  /// Verify the server's certificate and host name. Off, anyone on the path can read and change
  /// the bytes (the CLI's --insecure).
  bool verify_peer = true;
  /// Redirects (301, 302, 303, 307, 308) a size or range read follows before failing. The last
  /// location of each object is remembered, so later reads go there directly.
  int max_redirects = 10;
  /// Proxies; unset means the environment's http_proxy, https_proxy and no_proxy (each
  /// lowercase first, then uppercase), read when the client is made.
  std::optional<ProxyOptions> proxies{};
};

}  // namespace tensorstream
