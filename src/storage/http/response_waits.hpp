#pragma once
// The requests of one client that are waiting for their server, so that a progress display can
// say what a transfer that moves no bytes is waiting for.

#include <chrono>
#include <list>
#include <mutex>
#include <optional>
#include <string>

namespace tensorstream {

/// Waits of a client's requests for a server: to connect, or for a response header after the
/// request was sent. Begun and ended on the requests' strands, read from any thread.
class ResponseWaits {
 public:
  using Clock = std::chrono::steady_clock;

  /// What a request waits for.
  enum class Phase {
    connection,  ///< Resolving, connecting and handshaking.
    response,    ///< The response header, after the request was sent.
  };

  /// One wait, registered from construction until destruction or end().
  class Wait {
   public:
    Wait() = default;
    Wait(Wait&& other) noexcept;
    Wait& operator=(Wait&& other) noexcept;
    ~Wait() { end(); }

    /// Ends the wait early: the awaited thing arrived.
    void end();

   private:
    friend class ResponseWaits;
    struct Entry {
      Clock::time_point since;
      Phase phase;
      const std::string* host;
    };
    Wait(ResponseWaits* waits, std::list<Entry>::iterator entry) : waits_(waits), entry_(entry) {}

    ResponseWaits* waits_ = nullptr;
    std::list<Entry>::iterator entry_;
  };

  /// The wait that has lasted longest, as text: "a response from HOST" or "a connection to
  /// HOST", and its length so far.
  struct Longest {
    std::string what;
    std::chrono::duration<double> waited;
  };

  ResponseWaits() = default;
  ResponseWaits(const ResponseWaits&) = delete;
  ResponseWaits& operator=(const ResponseWaits&) = delete;

  /// Starts a wait for `host` ("example.com", "127.0.0.1:8080"), which must outlive it.
  Wait begin(Phase phase, const std::string& host);

  /// The longest wait in progress at `now`; nullopt when no request waits.
  std::optional<Longest> longest(Clock::time_point now = Clock::now()) const;

 private:
  mutable std::mutex mutex_;
  // In the order the waits began: the first is the longest.
  std::list<Wait::Entry> entries_;
};

}  // namespace tensorstream
