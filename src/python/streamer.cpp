// _Streamer: SafeTensorsStreamer for Python. Every wait for a tensor is the stream's coroutine
// next() awaited on the runner thread (runner.hpp), which either a blocked Python thread waits
// for (next(), with the GIL released) or whose result the extension's Python thread hands to a
// callback that wakes an asyncio event loop (next_async()); either way the wait can be
// cancelled, and close() can end the stream under it.

#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/exception_message.hpp"
#include "python/bindings.hpp"
#include "python/errors.hpp"
#include "python/options.hpp"
#include "python/runner.hpp"
#include "python/tensors.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace asio = boost::asio;
namespace py = pybind11;

namespace tensorstream::python {
namespace {

// How often a thread blocked in next() looks for a signal (Ctrl-C), which only the interpreter
// can notice: Python code waiting in C++ must check itself, as time.sleep() does.
constexpr auto signal_check_interval = std::chrono::milliseconds(100);

// A tensor taken from the stream that its waiter could not receive (a signal interrupted the
// wait, an event loop closed before its callback ran): the next next() returns it, so that no
// tensor is lost. Touched only with the GIL.
using Stash = std::optional<NamedTensor>;

// One next() of the stream, from its start to its result.
struct Wait {
  std::mutex mutex;
  std::condition_variable changed;
  bool done = false;       // the result is in
  bool delivered = false;  // and next_async()'s callback has had it (at once for a blocking next)
  bool withdrawn = false;  // close() cancelled it: an abort is the owner's, not the caller's
  std::optional<NamedTensor> tensor;
  std::exception_ptr error;
  // Emitted on the runner thread only: Asio's signals are not thread-safe.
  asio::cancellation_signal cancel;
  // next_async()'s callback, touched only with the GIL; null for a blocking next().
  py::object on_done;
  std::shared_ptr<Stash> stash;
  std::string remote_path;
  // The stream of a destroyed _Streamer, ended once this wait is over (by the thread that ends
  // it: the runner, or the Python thread after a callback).
  std::shared_ptr<SafeTensorsStreamer> stream_to_end;
};

asio::awaitable<std::optional<NamedTensor>> next_of(SafeTensorsStreamer* streamer) {
  co_return co_await streamer->next();
}

// (name, tensor), the tensor over the stream's memory without a copy, or None after the last.
py::object to_python(std::optional<NamedTensor> tensor) {
  if (!tensor) return py::none();
  return py::make_tuple(std::move(tensor->first), python_tensor(std::move(tensor->second)));
}

template <class Predicate>
void wait_for(Wait& wait, Predicate predicate) {
  std::unique_lock lock(wait.mutex);
  wait.changed.wait(lock, [&] { return predicate(wait); });
}

void cancel(const std::shared_ptr<Wait>& wait) {
  asio::post(runner_executor(), [wait] { wait->cancel.emit(asio::cancellation_type::all); });
}

// The wait's error as the caller should see it: a wait close() withdrew ends in Cancelled
// ("closed"), not in the cancellation of the caller's own task or thread.
std::exception_ptr caller_error(const Wait& wait) {
  if (wait.withdrawn && tensorstream::detail::is_operation_aborted(wait.error)) {
    return std::make_exception_ptr(
        Cancelled(wait.remote_path + ": the streamer was closed while next() waited"));
  }
  return wait.error;
}

py::dict stats_dict(const StreamStats& stats) {
  py::dict result;
  result["files"] = stats.files;
  result["tensors"] = stats.tensors;
  result["total_tensors"] = stats.total_tensors;
  result["bytes"] = stats.bytes;
  result["total_bytes"] = stats.total_bytes;
  result["elapsed_seconds"] = stats.elapsed_seconds;
  result["first_tensor_seconds"] =
      stats.first_tensor_seconds < 0 ? py::object(py::none()) : py::float_(stats.first_tensor_seconds);
  result["requests"] = stats.requests;
  result["direct_bytes"] = stats.direct_bytes;
  result["cached_bytes"] = stats.cached_bytes;
  result["source_bytes"] = stats.source_bytes;
  result["retries"] = stats.retries;
  result["connections"] = stats.connections;
  result["peak_memory"] = stats.peak_memory;
  result["fresh_memory"] = stats.fresh_memory;
  result["io_mode"] = stats.io_mode;
  result["chunk_size"] = stats.chunk_size;
  result["gigabytes_per_second"] = stats.gigabytes_per_second();
  return result;
}

// Every member is read and written with the GIL held; the GIL is released only around waits and
// the stream's destruction, and `closing_` keeps other threads from starting anything meanwhile.
class Streamer {
 public:
  Streamer(std::string remote_path, std::string local_path, const py::dict& options)
      : remote_path_(std::move(remote_path)), local_path_(std::move(local_path)) {
    if (shutting_down()) throw StateError(remote_path_ + ": the interpreter is shutting down");
    StreamerOptions streamer_options = python::streamer_options(options);
    without_gil([&] {
      streamer_ = std::make_unique<SafeTensorsStreamer>(remote_path_, local_path_,
                                                        std::move(streamer_options));
    });
  }

  // Not close(): a destructor must not release the GIL, because a daemon thread that takes it
  // back while the interpreter exits is ended by a forced unwind, which a destructor turns into
  // std::terminate. The extension's threads end the stream instead: the runner at once, or
  // whichever ends the pending wait (withdrawn here), as the stream must outlive its coroutine.
  ~Streamer() {
    if (!streamer_) return;
    if (made_in_another_process()) {
      // A child of fork(): the stream's threads stayed in the parent, and so does its end.
      static_cast<void>(streamer_.release());
      return;
    }
    std::shared_ptr<SafeTensorsStreamer> stream(std::move(streamer_));
    if (pending_) {
      std::lock_guard lock(pending_->mutex);
      if (!pending_->done) {
        pending_->withdrawn = true;
        pending_->stream_to_end = std::move(stream);
        cancel(pending_);
        return;
      }
    }
    asio::post(runner_executor(), [stream = std::move(stream)]() mutable { stream.reset(); });
  }
  Streamer(const Streamer&) = delete;
  Streamer& operator=(const Streamer&) = delete;

  // The next (name, tensor), or None after the last; blocks with the GIL released.
  py::object next() {
    check_process();
    await_delivery();
    if (*stash_) return take_stash();
    const auto wait = start(py::object());
    wait_interruptibly(wait);
    std::lock_guard lock(wait->mutex);
    if (wait->error) std::rethrow_exception(caller_error(*wait));
    return to_python(std::move(wait->tensor));
  }

  // Calls on_done(result, exception) once the next tensor is there, on the extension's Python
  // thread (or at once, for a tensor already taken): result as next() returns it, or exception the Python
  // exception object it would raise. on_done returns False when it could not hand a tensor on
  // (its event loop closed), which keeps the tensor for the next call.
  void next_async(py::object on_done) {
    if (on_done.is_none()) throw py::type_error("on_done must be callable");
    check_process();
    await_delivery();
    if (*stash_) {
      NamedTensor kept = **stash_;
      if (!on_done(take_stash(), py::none()).cast<bool>()) *stash_ = std::move(kept);
      return;
    }
    start(std::move(on_done));
  }

  // Ends the stream: a pending next is withdrawn (it ends in CancelledError), outstanding
  // requests are cancelled, and their memory is released. Tensors already returned stay valid.
  // Idempotent.
  void close() {
    if (closing_ || !streamer_) return;
    closing_ = true;
    if (made_in_another_process()) {
      static_cast<void>(streamer_.release());  // as the destructor does
      return;
    }
    if (const auto pending = pending_) {
      {
        std::lock_guard lock(pending->mutex);
        pending->withdrawn = true;
      }
      cancel(pending);
      // A callback that closes its own streamer must not wait for its own delivery.
      const bool wait_for_delivery = !on_python_thread();
      without_gil([&] {
        wait_for(*pending, [&](const Wait& w) { return wait_for_delivery ? w.delivered : w.done; });
      });
    }
    last_stats_ = streamer_->stats();
    std::unique_ptr<SafeTensorsStreamer> streamer = std::move(streamer_);
    without_gil([&] { streamer.reset(); });
  }

  bool closed() const { return closing_ || !streamer_; }
  py::dict stats() const {
    check_process();
    return stats_dict(streamer_ ? streamer_->stats() : last_stats_);
  }
  const std::string& remote_path() const { return remote_path_; }
  const std::string& local_path() const { return local_path_; }

 private:
  // Whether this is a child of fork() and the streamer its parent's: its threads and its
  // pending wait stayed there.
  bool made_in_another_process() const { return ::getpid() != pid_; }

  // Fails at once where a wait would never end.
  void check_process() const {
    if (!made_in_another_process() || closing_) return;
    throw StateError(remote_path_ + ": this streamer was made in process " +
                     std::to_string(pid_) + " before os.fork(); its threads stayed there: make "
                     "a new streamer in this process (" + std::to_string(::getpid()) + ")");
  }

  // Waits until the last next_async()'s result, if it is in, has been handed to its callback: a
  // callback that cannot take its tensor stashes it, and the next call must find it there rather
  // than take the tensor after it. Not on the Python thread, which is the one that hands it on.
  void await_delivery() {
    const std::shared_ptr<Wait> pending = pending_;
    if (!pending || on_python_thread()) return;
    without_gil([&] { wait_for(*pending, [](const Wait& w) { return !w.done || w.delivered; }); });
  }

  py::object take_stash() {
    py::object item = to_python(std::move(*stash_));
    stash_->reset();
    return item;
  }

  std::shared_ptr<Wait> start(py::object on_done) {
    if (closed()) throw StateError(remote_path_ + ": the streamer is closed");
    if (shutting_down()) throw StateError(remote_path_ + ": the interpreter is shutting down");
    if (pending_) {
      std::lock_guard lock(pending_->mutex);
      if (!pending_->done) {
        throw StateError(remote_path_ + ": another next() is still waiting; one at a time");
      }
    }
    auto wait = std::make_shared<Wait>();
    wait->on_done = std::move(on_done);
    wait->stash = stash_;
    wait->remote_path = remote_path_;
    pending_ = wait;
    asio::co_spawn(runner_executor(), next_of(streamer_.get()),
                   asio::bind_cancellation_slot(
                       wait->cancel.slot(),
                       [wait](std::exception_ptr error, std::optional<NamedTensor> tensor) {
                         finish(wait, error, std::move(tensor));
                       }));
    return wait;
  }

  // On the runner thread, once the wait has its result; a callback is called on the Python
  // thread (call_python()).
  static void finish(const std::shared_ptr<Wait>& wait, std::exception_ptr error,
                     std::optional<NamedTensor> tensor) {
    // on_done is set before the wait starts and cleared only below, so reading whether it is
    // null needs no GIL.
    const bool has_callback = static_cast<bool>(wait->on_done);
    std::shared_ptr<SafeTensorsStreamer> stream_to_end;
    {
      std::lock_guard lock(wait->mutex);
      wait->error = error;
      wait->tensor = std::move(tensor);
      wait->done = true;
      wait->delivered = !has_callback;
      if (!has_callback) stream_to_end = std::move(wait->stream_to_end);
    }
    wait->changed.notify_all();
    if (!has_callback) return;  // a destroyed _Streamer's stream ends as stream_to_end goes
    call_python([wait](bool with_gil) {
      if (with_gil) {
        reporting_errors([&] { deliver(*wait); });
      } else {
        wait->on_done.release();  // cannot even be released without the GIL: leaked at exit
      }
      std::shared_ptr<SafeTensorsStreamer> ended;  // a destroyed _Streamer's, ended here
      {
        std::lock_guard lock(wait->mutex);
        wait->delivered = true;
        ended = std::move(wait->stream_to_end);
      }
      wait->changed.notify_all();
    });
  }

  // Hands the wait's result to its callback; with the GIL.
  static void deliver(Wait& wait) {
    const py::object on_done = std::move(wait.on_done);
    std::exception_ptr result_error;
    std::optional<NamedTensor> result;
    {
      std::lock_guard lock(wait.mutex);
      result_error = caller_error(wait);
      result = std::move(wait.tensor);
    }
    if (result_error) {
      on_done(py::none(), python_exception(result_error));
    } else if (!result) {
      on_done(py::none(), py::none());
    } else {
      NamedTensor kept = *result;
      if (!on_done(to_python(std::move(result)), py::none()).cast<bool>()) {
        *wait.stash = std::move(kept);
      }
    }
  }

  // Waits for `wait` with the GIL released, waking every signal_check_interval to let Python
  // run its signal handlers: one that raises (KeyboardInterrupt) cancels the wait and is raised,
  // and a tensor that arrived meanwhile is kept for the next call.
  void wait_interruptibly(const std::shared_ptr<Wait>& wait) {
    for (;;) {
      bool done = false;
      without_gil([&] {
        std::unique_lock lock(wait->mutex);
        done = wait->changed.wait_for(lock, signal_check_interval, [&] { return wait->done; });
      });
      if (done) return;
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set interrupted;
        cancel(wait);
        without_gil([&] { wait_for(*wait, [](const Wait& w) { return w.done; }); });
        std::lock_guard lock(wait->mutex);
        if (!wait->error && wait->tensor) *stash_ = std::move(wait->tensor);
        throw interrupted;
      }
    }
  }

  std::string remote_path_;
  std::string local_path_;
  std::unique_ptr<SafeTensorsStreamer> streamer_;
  bool closing_ = false;
  StreamStats last_stats_;
  std::shared_ptr<Wait> pending_;
  std::shared_ptr<Stash> stash_ = std::make_shared<Stash>();
  const pid_t pid_ = ::getpid();
};

}  // namespace

void bind_streamer(py::module_& module) {
  py::class_<Streamer>(module, "_Streamer")
      .def(py::init<std::string, std::string, const py::dict&>(), py::arg("remote_path"),
           py::arg("local_path"), py::arg("options"))
      .def("next", &Streamer::next)
      .def("next_async", &Streamer::next_async, py::arg("on_done"))
      .def("close", &Streamer::close)
      .def_property_readonly("closed", &Streamer::closed)
      .def("stats", &Streamer::stats)
      .def_property_readonly("remote_path", &Streamer::remote_path)
      .def_property_readonly("local_path", &Streamer::local_path);
  module.def("_begin_shutdown", &begin_shutdown);
}

}  // namespace tensorstream::python
