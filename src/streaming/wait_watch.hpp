#pragma once
// What the requests of a long job wait for, over the stores and streams it uses one after
// another: a progress display sees no byte move while a server stays silent, and should say
// which server and for how long rather than show a rate of nothing.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace tensorstream {
class ObjectStore;
class RawStreamer;
}  // namespace tensorstream

namespace tensorstream::detail {

/// The request that has waited longest for its server: what for, as StoreStats::waiting_for
/// says it ("a response from HOST"), and for how many seconds; empty and 0 when none waits.
struct LongestWait {
  std::string what;
  double seconds = 0;
};

/// The stores and streams of one job, each watched while its Watching lives. Not thread-safe:
/// every call, and the coroutine of report(), on one strand.
class WaitWatch {
 public:
  /// Watches something until destroyed; a default-constructed one watches nothing.
  class Watching {
   public:
    Watching() = default;
    Watching(Watching&& other) noexcept;
    Watching& operator=(Watching&& other) noexcept;
    ~Watching();

   private:
    friend class WaitWatch;
    Watching(WaitWatch* watch, std::uint64_t id) : watch_(watch), id_(id) {}
    WaitWatch* watch_ = nullptr;
    std::uint64_t id_ = 0;
  };

  /// A watch whose report() ticks on `executor`.
  explicit WaitWatch(boost::asio::any_io_executor executor);
  WaitWatch(const WaitWatch&) = delete;
  WaitWatch& operator=(const WaitWatch&) = delete;

  /// Watches `store` (or `stream`), which must outlive the returned Watching.
  [[nodiscard]] Watching watch(const ObjectStore& store);
  [[nodiscard]] Watching watch(const RawStreamer& stream);

  /// The longest wait of a request of anything watched now.
  LongestWait longest() const;

  /// Until finish() (or cancellation, which it does not throw), every `interval` calls `report`
  /// with longest() while a request waits, and once more when the waits are over.
  boost::asio::awaitable<void> report(std::function<void(const LongestWait&)> report,
                                      std::chrono::milliseconds interval = std::chrono::seconds(1));

  /// Ends report().
  void finish();

 private:
  std::uint64_t add(std::function<LongestWait()> probe);

  boost::asio::steady_timer tick_;
  std::map<std::uint64_t, std::function<LongestWait()>> watched_;
  std::uint64_t next_id_ = 1;
  bool finished_ = false;
};

/// `watch` watching `watched`, or nothing when `watch` is null.
template <class Watched>
WaitWatch::Watching watch_if(WaitWatch* watch, const Watched& watched) {
  return watch ? watch->watch(watched) : WaitWatch::Watching{};
}

/// A report for with_wait_reports() that writes each wait into `progress` (a progress struct with
/// `waiting_for` and `waiting_seconds`) and passes it to `on_progress`, where set: while a server
/// stays silent no counter moves, so the waits are reported apart. Both must outlive it.
template <class Progress>
std::function<void(const LongestWait&)> reporting_into(
    Progress& progress, const std::function<void(const Progress&)>& on_progress) {
  return [&progress, &on_progress](const LongestWait& wait) {
    progress.waiting_for = wait.what;
    progress.waiting_seconds = wait.seconds;
    if (on_progress) on_progress(progress);
  };
}

/// Runs `work` while `watch` reports to `report` what the work's requests wait for every
/// `interval` (see WaitWatch::report); returns when the work does, with its error. The caller's
/// cancellation reaches both.
boost::asio::awaitable<void> with_wait_reports(
    WaitWatch& watch, boost::asio::awaitable<void> work,
    std::function<void(const LongestWait&)> report,
    std::chrono::milliseconds interval = std::chrono::seconds(1));

}  // namespace tensorstream::detail
