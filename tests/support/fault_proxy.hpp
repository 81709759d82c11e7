#pragma once
// A proxy that breaks some of the responses of a real server, for testing retries end to end.

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// An HTTP/1.1 proxy on an ephemeral 127.0.0.1 port, running in its own thread, that forwards
/// each request to a server on 127.0.0.1:`upstream_port` and injects faults into the answers of
/// the first object reads (GETs with a Range header; listings and HEADs pass untouched).
///
/// Counts refer to object reads in the order the proxy received them, from 0: with
/// `fail_first = 2, reset_first = 4` reads 0 and 1 get the failure status, 2 and 3 a reset mid
/// body, and later ones pass. With a `mix_rate`, the reads after those each get a fault drawn at
/// that rate from a mix of all kinds, for soak runs.
///
/// Uploads (PUTs) are counted apart: the first `upload_fail_first` get the failure status, the
/// next `upload_reset_first` a TCP reset after `upload_cut_after` bytes of their body arrived.
/// The proxy also records how many uploads it held at once, and `answer` can reply to requests
/// in place of the upstream (e.g. one the upstream does not implement).
class FaultProxy {
 public:
  /// The faults of the mix, drawn with equal odds.
  enum class MixFault { status_503, status_500, reset, short_body, stall, count };

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
    /// Then the share of reads, from 0 to 1, that get one fault of the mix: 503 or 500 with
    /// `fail_body`, a reset or a clean close after half the body, or half the body, silence
    /// for `stall_for` and the rest.
    double mix_rate = 0;
    std::chrono::milliseconds stall_for{2000};
    std::uint64_t seed = 1;  ///< Of the draws of the mix, so that a run can be repeated.
    /// Called with each object read's number, on the proxy's thread, before it is forwarded:
    /// lets a test change the object between the attempts of one read.
    std::function<void(int read)> before_read{};
    int upload_fail_first = 0;  ///< Answer the first K uploads with `fail_status`.
    int upload_reset_first = 0;  ///< Then reset the next K uploads mid-body ...
    std::size_t upload_cut_after = 0;  ///< ... once this many body bytes arrived.
    /// Called with each request's method and target on the proxy's thread: a non-empty
    /// return value is sent as the whole response (status line, header, body) instead of
    /// forwarding the request.
    std::function<std::string(const std::string& method, const std::string& target)> answer{};
    /// Called with each request `answer` left to the upstream: true forwards it but drops the
    /// upstream's answer and sends nothing until the client hangs up, as when an answer is
    /// lost. Requests that arrive meanwhile wait until the upstream has answered, so that they
    /// find what the lost one did.
    std::function<bool(const std::string& method, const std::string& target)> lose_answer{};
  };

  /// Starts forwarding to 127.0.0.1:`upstream_port`.
  FaultProxy(std::uint16_t upstream_port, Faults faults);

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// "http://127.0.0.1:PORT", the endpoint to give clients.
  std::string endpoint() const;

  /// Object reads received so far.
  int reads() const { return reads_.load(); }

  /// Uploads (PUTs) received so far.
  int uploads() const { return uploads_.load(); }

  /// The most uploads the proxy held at once, from their header's arrival to the answer.
  int max_uploads_in_flight() const { return max_uploads_in_flight_.load(); }

  /// Uploads the proxy holds now: received or forwarded, and not yet answered or dropped.
  int uploads_in_flight() const { return uploads_in_flight_.load(); }
  /// Requests of any kind the proxy holds now, from their header's arrival until their answer
  /// went out or was dropped: none once the upstream has finished every request sent so far.
  int requests_in_flight() const { return requests_in_flight_.load(); }

  /// Faults injected so far.
  int injected() const { return injected_.load(); }

  /// Faults of one kind of the mix injected so far.
  int injected(MixFault kind) const { return mixed_[static_cast<std::size_t>(kind)].load(); }

 private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  // The fault of the mix for the next read past the counted ones; MixFault::count for none.
  MixFault draw();

  const std::uint16_t upstream_port_;
  const Faults faults_;
  std::atomic<int> reads_{0};
  std::atomic<int> injected_{0};
  std::atomic<int> uploads_{0};
  std::atomic<int> uploads_in_flight_{0};
  std::atomic<int> requests_in_flight_{0};
  std::atomic<int> max_uploads_in_flight_{0};
  std::atomic<int> losing_{0};  // Requests forwarded whose answer will be lost, not yet answered.
  std::array<std::atomic<int>, static_cast<std::size_t>(MixFault::count)> mixed_{};
  std::mutex random_mutex_;
  std::mt19937_64 random_;
  LoopbackListener listener_;
};

}  // namespace tensorstream::testing
