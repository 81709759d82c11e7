#include "streaming/wait_watch.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

#include "streaming/run_concurrently.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::detail {

namespace asio = boost::asio;

WaitWatch::Watching::Watching(Watching&& other) noexcept
    : watch_(std::exchange(other.watch_, nullptr)), id_(other.id_) {}

WaitWatch::Watching& WaitWatch::Watching::operator=(Watching&& other) noexcept {
  if (this != &other) {
    if (watch_) watch_->watched_.erase(id_);
    watch_ = std::exchange(other.watch_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

WaitWatch::Watching::~Watching() {
  if (watch_) watch_->watched_.erase(id_);
}

WaitWatch::WaitWatch(asio::any_io_executor executor) : tick_(std::move(executor)) {}

std::uint64_t WaitWatch::add(std::function<LongestWait()> probe) {
  const std::uint64_t id = next_id_++;
  watched_.emplace(id, std::move(probe));
  return id;
}

WaitWatch::Watching WaitWatch::watch(const ObjectStore& store) {
  return {this, add([&store] {
            const StoreStats stats = store.stats();
            return LongestWait{stats.waiting_for, stats.waiting_seconds};
          })};
}

WaitWatch::Watching WaitWatch::watch(const RawStreamer& stream) {
  return {this, add([&stream] {
            const StreamStats stats = stream.stats();
            return LongestWait{stats.waiting_for, stats.waiting_seconds};
          })};
}

LongestWait WaitWatch::longest() const {
  LongestWait longest;
  for (const auto& [id, probe] : watched_) {
    LongestWait wait = probe();
    if (!wait.what.empty() && wait.seconds >= longest.seconds) longest = std::move(wait);
  }
  return longest;
}

asio::awaitable<void> WaitWatch::report(std::function<void(const LongestWait&)> report,
                                        std::chrono::milliseconds interval) {
  bool reported_a_wait = false;
  while (!finished_) {
    tick_.expires_after(interval);
    const auto [error] = co_await tick_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (error || finished_) co_return;
    const LongestWait wait = longest();
    if (wait.what.empty() && !reported_a_wait) continue;
    reported_a_wait = !wait.what.empty();
    report(wait);
  }
}

void WaitWatch::finish() {
  finished_ = true;
  tick_.cancel();
}

namespace {

asio::awaitable<void> finish_after(WaitWatch& watch, asio::awaitable<void> work) {
  co_await std::move(work);
  watch.finish();
}

}  // namespace

asio::awaitable<void> with_wait_reports(WaitWatch& watch, asio::awaitable<void> work,
                                        std::function<void(const LongestWait&)> report,
                                        std::chrono::milliseconds interval) {
  co_await run_concurrently(2, [&](std::size_t task) -> asio::awaitable<void> {
    if (task == 0) return finish_after(watch, std::move(work));
    return watch.report(report, interval);
  });
}

}  // namespace tensorstream::detail
