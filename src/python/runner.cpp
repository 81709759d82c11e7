#include "python/runner.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "tensorstream/async/library_thread.hpp"

namespace asio = boost::asio;

namespace tensorstream::python {
namespace {

struct Runner {
  asio::io_context context{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  Runner() {
    async::LibraryThread("ts-py-runner", [this] { context.run(); }).detach();
  }
};

std::atomic<bool> shutdown_begun{false};

// The thread of call_python(): a queue, and a loop that takes the GIL for each call.
struct PythonThread {
  std::mutex mutex;
  std::condition_variable queued;
  std::deque<std::function<void(bool)>> calls;
  std::thread::id id;

  PythonThread() {
    async::LibraryThread thread("ts-python", [this] { run(); });
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

// The extension's two threads, made at first use in each process: a child of fork() has none
// of its parent's threads, so it makes its own. The old ones are leaked, as the first ones are
// on purpose: destroying a context or queue at exit would race the detached thread using it.
struct Threads {
  std::mutex mutex;  // held across fork(), so that the child's copy is never locked
  pid_t pid = 0;
  Runner* runner = nullptr;
  PythonThread* python = nullptr;

  Threads() {
    ::pthread_atfork([] { instance().mutex.lock(); }, [] { instance().mutex.unlock(); },
                     [] { instance().mutex.unlock(); });
  }

  static Threads& instance() {
    static Threads* const threads = new Threads;
    return *threads;
  }

  // Both threads of this process, started now if it has none.
  std::pair<Runner*, PythonThread*> current() {
    std::lock_guard lock(mutex);
    if (pid != ::getpid()) {
      pid = ::getpid();
      runner = new Runner;
      python = new PythonThread;
    }
    return {runner, python};
  }
};

Runner& runner() { return *Threads::instance().current().first; }

PythonThread& python_thread() { return *Threads::instance().current().second; }

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
