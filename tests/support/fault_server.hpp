#pragma once
// An HTTP server that misbehaves on purpose, for testing how clients cope.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// A small HTTP/1.1 server on an ephemeral 127.0.0.1 port, running in its own thread, serving
/// one in-memory object at one path (other paths get 404). By default it behaves: keep-alive,
/// 206 for a single `Range: bytes=a-b`, 416 for a range past the end, 200 without Range, HEAD.
/// A Behaviour injects the faults real servers and proxies produce now and then.
///
/// Faults that name a count ("the first K requests") count every request the server received,
/// from 0, so `fail_first = 2` fails requests 0 and 1 and serves request 2; use `always` for
/// every request.
class FaultServer {
 public:
  /// A count of requests meaning all of them.
  static constexpr int always = std::numeric_limits<int>::max();

  /// How to answer.
  struct Behaviour {
    bool honour_range = true;           ///< false: ignore Range and send 200 with everything.
    bool chunked = false;               ///< Send bodies with Transfer-Encoding: chunked.
    std::size_t chunk_size = 1000;      ///< Body bytes per chunk when chunked.
    int fail_first = 0;                 ///< Answer the first K requests with fail_status.
    unsigned fail_status = 503;         ///< Status of failed requests (with a text/plain body).
    std::string fail_range{};           ///< Also fail every request with exactly this Range
                                        ///< header, e.g. "bytes=100-199".
    int truncate_first = 0;             ///< For the first K requests, announce the whole body
                                        ///< but close the connection after truncate_after bytes.
    int reset_first = 0;                ///< Like truncate_first, but end with a TCP reset.
    std::size_t truncate_after = 0;     ///< Body bytes sent before a truncation or reset.
    bool stall = false;                 ///< Send the response header, then nothing at all.
    int stall_from_request = -1;        ///< Stall every request from this one on (counting
                                        ///< from 0); -1: none.
    int silent_from_request = -1;       ///< Read every request from this one on (counting from
                                        ///< 0) and never answer it; -1: none.
    bool wrong_content_range = false;   ///< Announce a Content-Range one byte off.
    bool close_after_response = false;  ///< Close every connection after its response without
                                        ///< announcing it, like a short keep-alive timeout.
    bool body_on_head_error = false;    ///< Send the body of a failed HEAD's error response,
                                        ///< which HTTP forbids and some S3 clones do anyway.
    std::string pause_range{};          ///< For a request with exactly this Range header, send
    std::size_t pause_after = 0;        ///< pause_after body bytes, then the rest only once
                                        ///< resume() is called: a slow link, made to wait for
                                        ///< the test.
  };

  /// Starts serving `object` at `path` (e.g. "/object.bin").
  FaultServer(std::string path, std::string object, Behaviour behaviour);

  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  /// The port, on 127.0.0.1.
  std::uint16_t port() const { return listener_.port(); }

  /// "http://127.0.0.1:PORT".
  std::string base_url() const;

  /// Requests received so far.
  int requests() const { return requests_.load(); }

  /// The Range header of every request received, in order ("" for none).
  std::vector<std::string> ranges() const;

  /// Connections accepted so far.
  int connections() const { return connections_.load(); }

  /// Sends the rest of responses held by Behaviour::pause_range, now and from now on.
  void resume() { resumed_ = true; }

 private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

  const std::string path_;
  const std::string object_;
  const Behaviour behaviour_;
  std::atomic<int> requests_{0};
  std::atomic<int> connections_{0};
  std::atomic<bool> resumed_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> ranges_;
  LoopbackListener listener_;
};

}  // namespace tensorstream::testing
