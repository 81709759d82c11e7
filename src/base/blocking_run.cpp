#include "base/blocking_run.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <list>
#include <memory>
#include <mutex>

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;

// A run in progress: its context, and the signal bound to its work. The signal is shared with the
// handler that emits it, which may still sit in the context's queue when the run is over.
struct BlockingRun {
  asio::io_context* io;
  std::shared_ptr<asio::cancellation_signal> cancel;
};

class BlockingRuns {
 public:
  // Registers a run; throws operation_aborted when the runs were interrupted.
  std::list<BlockingRun>::iterator add(asio::io_context& io) {
    const std::lock_guard lock(mutex_);
    if (interrupted_) throw boost::system::system_error(asio::error::operation_aborted);
    return runs_.insert(runs_.end(),
                        BlockingRun{&io, std::make_shared<asio::cancellation_signal>()});
  }

  void remove(std::list<BlockingRun>::iterator run) {
    const std::lock_guard lock(mutex_);
    runs_.erase(run);
  }

  bool interrupt() {
    const std::lock_guard lock(mutex_);
    interrupted_ = true;
    // A cancellation signal is emitted on the thread that runs its work, never from here.
    for (const BlockingRun& run : runs_) {
      asio::post(*run.io, [cancel = run.cancel] { cancel->emit(asio::cancellation_type::terminal); });
    }
    return !runs_.empty();
  }

 private:
  std::mutex mutex_;
  std::list<BlockingRun> runs_;
  bool interrupted_ = false;
};

BlockingRuns& blocking_runs() {
  static BlockingRuns runs;
  return runs;
}

}  // namespace

void run_blocking(asio::io_context& io, asio::awaitable<void> work) {
  const auto run = blocking_runs().add(io);
  std::exception_ptr error;
  asio::co_spawn(io, std::move(work),
                 asio::bind_cancellation_slot(run->cancel->slot(), [&](std::exception_ptr failure) {
                   error = failure;
                   io.stop();
                 }));
  io.run();
  blocking_runs().remove(run);
  if (error) std::rethrow_exception(error);
}

bool interrupt_blocking_runs() { return blocking_runs().interrupt(); }

}  // namespace tensorstream::detail
