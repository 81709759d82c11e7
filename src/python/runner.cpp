#include "python/runner.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The thread of call_python(): a queue, and a loop that takes the GIL for each call.
//
// Once the interpreter finalizes, a thread that waits for the GIL, or drops it inside a call
// (a callback's write to an event loop's self-pipe does), is ended by a forced unwind, which
// then releases the call's Python objects without the GIL, racing finalization's frees. So
// stop() (at exit, before finalization) waits for the call that holds the GIL to end, and no
// later call takes it.
struct PythonThread {
  std::mutex mutex;
  std::condition_variable queued;
  std::condition_variable left_python;
  std::deque<std::function<void(bool)>> calls;
  bool stopped = false;    // no call takes the GIL any more
  bool in_python = false;  // a call holds the GIL or is about to take it
  std::thread::id id;

  PythonThread() {
    async::LibraryThread thread("ts-python", [this] { run(); });
    id = thread.get_id();
    thread.detach();
  }

  void run() {
    for (;;) {
      std::function<void(bool)> call;
      bool with_gil = false;
      {
        std::unique_lock lock(mutex);
        queued.wait(lock, [&] { return !calls.empty(); });
        call = std::move(calls.front());
        calls.pop_front();
        with_gil = !stopped && !interpreter_finalizing();
        in_python = with_gil;
      }
      if (!with_gil) {
        call(false);
        continue;
      }
      const PyGILState_STATE state = PyGILState_Ensure();
      call(true);
      PyGILState_Release(state);
      {
        std::lock_guard lock(mutex);
        in_python = false;
      }
      left_python.notify_all();
    }
  }

  // With the GIL, which it releases while the current call (which may be waiting for the GIL)
  // ends. Bounded, because a call runs the user's code (a logging handler), which may block.
  void stop() {
    std::unique_lock lock(mutex);
    stopped = true;
    if (!in_python || std::this_thread::get_id() == id) return;
    without_gil([&] {
      left_python.wait_for(lock, std::chrono::seconds(10), [&] { return !in_python; });
    });
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

  // This process's Python thread, or null if it started none.
  PythonThread* started_python_thread() {
    std::lock_guard lock(mutex);
    return pid == ::getpid() ? python : nullptr;
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

void begin_shutdown() {
  shutdown_begun = true;
  if (PythonThread* const thread = Threads::instance().started_python_thread()) thread->stop();
}

bool shutting_down() { return shutdown_begun || interpreter_finalizing(); }

}  // namespace tensorstream::python
