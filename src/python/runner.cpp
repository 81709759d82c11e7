#include "python/runner.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

namespace asio = boost::asio;

namespace tensorstream::python {
namespace {

struct Runner {
  asio::io_context context{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  Runner() {
    std::thread([this] { context.run(); }).detach();
  }
};

// Leaked on purpose: destroying the context at exit would race the detached thread.
Runner& runner() {
  static Runner* const instance = new Runner;
  return *instance;
}

std::atomic<bool> shutdown_begun{false};

// The thread of call_python(): a queue, and a loop that takes the GIL for each call.
struct PythonThread {
  std::mutex mutex;
  std::condition_variable queued;
  std::deque<std::function<void(bool)>> calls;
  std::thread::id id;

  PythonThread() {
    std::thread thread([this] { run(); });
    id = thread.get_id();
    thread.detach();
  }

  void run() {
    for (;;) {
      std::function<void(bool)> call;
      {
        std::unique_lock lock(mutex);
        queued.wait(lock, [&] { return !calls.empty(); });
        call = std::move(calls.front());
        calls.pop_front();
      }
      if (shutting_down()) {
        call(false);
        continue;
      }
      const PyGILState_STATE state = PyGILState_Ensure();
      call(true);
      PyGILState_Release(state);
    }
  }
};

PythonThread& python_thread() {
  static PythonThread* const instance = new PythonThread;  // leaked, as the runner
  return *instance;
}

}  // namespace

bool on_python_thread() { return std::this_thread::get_id() == python_thread().id; }

void call_python(std::function<void(bool)> call) {
  PythonThread& thread = python_thread();
  {
    std::lock_guard lock(thread.mutex);
    thread.calls.push_back(std::move(call));
  }
  thread.queued.notify_one();
}

asio::any_io_executor runner_executor() { return runner().context.get_executor(); }

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
