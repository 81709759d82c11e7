#pragma once
// A proxy that breaks some of the responses of a real server, for testing retries end to end.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// An HTTP/1.1 proxy on an ephemeral 127.0.0.1 port, running in its own thread, that forwards
/// each request to a server on 127.0.0.1:`upstream_port` and injects faults into the answers of
/// the first object reads (GETs with a Range header; listings and HEADs pass untouched).
///
/// Counts refer to object reads in the order the proxy received them, from 0: with
/// `fail_first = 2, reset_first = 4` reads 0 and 1 get the failure status, 2 and 3 a reset mid
/// body, and later ones pass.
class FaultProxy {
 public:
  /// Which faults to inject, in this order of precedence.
  struct Faults {
    int fail_first = 0;                  ///< Answer the first K reads with `fail_status`.
    unsigned fail_status = 503;          ///< e.g. 503 with S3's SlowDown document.
    std::string fail_content_type = "application/xml";  ///< Content-Type of `fail_body`.
    std::string fail_body{};             ///< The service's error document.
    int stall_first = 0;                 ///< Then send only the header of the next K answers.
    int reset_first = 0;                 ///< Then cut the next K bodies with a TCP reset ...
    int truncate_first = 0;              ///< ... then the next K with a clean close ...
    std::size_t cut_after = 0;           ///< ... after this many body bytes.
  };

  /// Starts forwarding to 127.0.0.1:`upstream_port`.
  FaultProxy(std::uint16_t upstream_port, Faults faults);

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// "http://127.0.0.1:PORT", the endpoint to give clients.
  std::string endpoint() const;

  /// Object reads received so far.
  int reads() const { return reads_.load(); }

  /// Faults injected so far.
  int injected() const { return injected_.load(); }

 private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  const std::uint16_t upstream_port_;
  const Faults faults_;
  std::atomic<int> reads_{0};
  std::atomic<int> injected_{0};
  LoopbackListener listener_;
};

}  // namespace tensorstream::testing
