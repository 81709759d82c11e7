#include "python/runner.hpp"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

namespace asio = boost::asio;

namespace tensorstream::python {
namespace {

struct Runner {
  asio::io_context context{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  std::thread::id id;
  Runner() {
    std::thread thread([this] { context.run(); });
    id = thread.get_id();
    thread.detach();
  }
};

// Leaked on purpose: destroying the context at exit would race the detached thread.
Runner& runner() {
  static Runner* const instance = new Runner;
  return *instance;
}

std::atomic<bool> shutdown_begun{false};

}  // namespace

asio::any_io_executor runner_executor() { return runner().context.get_executor(); }

bool on_runner_thread() { return std::this_thread::get_id() == runner().id; }

void begin_shutdown() { shutdown_begun = true; }

bool shutting_down() {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing() != 0;
#else
  const bool finalizing = _Py_IsFinalizing() != 0;
#endif
  return shutdown_begun || finalizing;
}

}  // namespace tensorstream::python
