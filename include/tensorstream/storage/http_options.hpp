#pragma once
/// @file
/// Tuning of the HTTP range client shared by the http(s), s3 and gs backends.

#include <chrono>
#include <cstddef>
#include <string>

namespace tensorstream {

/// Options of the HTTP range client.
struct HttpOptions {
  /// Limit for resolving and connecting (TCP and TLS handshake together).
  std::chrono::milliseconds connect_timeout{10'000};
  /// A connection that delivers no byte for this long is abandoned and the request retried.
  std::chrono::milliseconds read_timeout{30'000};
  /// Attempts after the first for transient failures (resets, timeouts, 5xx, truncated bodies).
  int max_retries = 4;
  /// First backoff delay; each retry doubles the cap, with full jitter.
  std::chrono::milliseconds retry_base_delay{50};
  /// Upper bound of one backoff delay.
  std::chrono::milliseconds retry_max_delay{2'000};
  /// Idle keep-alive connections kept per host.
  std::size_t max_idle_connections = 64;
  /// PEM file of trusted CAs; empty means the system store (which honours SSL_CERT_FILE).
  std::string ca_file;
  /// Verify the server's certificate and host name. Only tests should turn this off.
  bool verify_peer = true;
};

}  // namespace tensorstream
