// _Streamer: SafeTensorsStreamer for Python. Every wait for a tensor is the stream's coroutine
// next() awaited on the runner thread (runner.hpp), which either a blocked Python thread waits
// for (next(), with the GIL released) or which calls back into an asyncio event loop
// (next_async()); either way the wait can be cancelled, and close() can end the stream under it.

#include <torch/csrc/autograd/python_variable.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "python/bindings.hpp"
#include "python/errors.hpp"
#include "python/options.hpp"
#include "python/runner.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace asio = boost::asio;
namespace py = pybind11;

namespace tensorstream::python {
namespace {

// How often a thread blocked in next() looks for a signal (Ctrl-C), which only the interpreter
// can notice: Python code waiting in C++ must check itself, as time.sleep() does.
constexpr auto signal_check_interval = std::chrono::milliseconds(100);

// One next() of the stream, from its start to its result.
struct Wait {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::optional<NamedTensor> tensor;
  std::exception_ptr error;
  // Emitted on the runner thread only: Asio's signals are not thread-safe.
  asio::cancellation_signal cancel;
  // next_async()'s callback, touched only with the GIL; null for a blocking next().
  py::object on_done;
};

asio::awaitable<std::optional<NamedTensor>> next_of(SafeTensorsStreamer* streamer) {
  co_return co_await streamer->next();
}

// (name, tensor), the tensor over the stream's memory without a copy, or None after the last.
py::object to_python(std::optional<NamedTensor> tensor) {
  if (!tensor) return py::none();
  auto variable = py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(tensor->second)));
  if (!variable) throw py::error_already_set();
  return py::make_tuple(std::move(tensor->first), std::move(variable));
}

void wait_until_done(Wait& wait) {
  std::unique_lock lock(wait.mutex);
  wait.finished.wait(lock, [&] { return wait.done; });
}

void cancel(const std::shared_ptr<Wait>& wait) {
  asio::post(runner_executor(), [wait] { wait->cancel.emit(asio::cancellation_type::all); });
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
  result["retries"] = stats.retries;
  result["connections"] = stats.connections;
  result["peak_memory"] = stats.peak_memory;
  result["io_mode"] = stats.io_mode;
  result["gigabytes_per_second"] = stats.gigabytes_per_second();
  return result;
}

class Streamer {
 public:
  Streamer(std::string remote_path, std::string local_path, const py::dict& options)
      : remote_path_(std::move(remote_path)), local_path_(std::move(local_path)) {
    StreamerOptions streamer_options = python::streamer_options(options);
    py::gil_scoped_release release;
    streamer_ = std::make_unique<SafeTensorsStreamer>(remote_path_, local_path_,
                                                      std::move(streamer_options));
  }

  ~Streamer() { close(); }
  Streamer(const Streamer&) = delete;
  Streamer& operator=(const Streamer&) = delete;

  // The next (name, tensor), or None after the last; blocks with the GIL released.
  py::object next() {
    const auto wait = start(py::object());
    wait_interruptibly(wait);
    std::unique_lock lock(wait->mutex);
    if (wait->error && closed()) {
      throw Cancelled(remote_path_ + ": the streamer was closed while next() waited");
    }
    if (wait->error) std::rethrow_exception(wait->error);
    return to_python(std::move(wait->tensor));
  }

  // Calls on_done(result, exception) on the runner thread once the next tensor is there: result
  // as next() returns it, or exception the Python exception object it would raise.
  void next_async(py::object on_done) {
    if (on_done.is_none()) throw py::type_error("on_done must be callable");
    start(std::move(on_done));
  }

  // Withdraws a pending next_async(): its callback then gets asyncio.CancelledError. The stream
  // goes on; a later next() gets the tensor the withdrawn one would have had.
  void cancel_next() {
    if (pending_) cancel(pending_);
  }

  // Ends the stream: a pending next is cancelled, outstanding requests are too, and their
  // memory is released. Tensors already returned stay valid. Idempotent.
  void close() {
    if (pending_ && !is_done(*pending_)) {
      cancel(pending_);
      py::gil_scoped_release release;
      wait_until_done(*pending_);
    }
    if (!streamer_) return;
    last_stats_ = streamer_->stats();
    std::unique_ptr<SafeTensorsStreamer> streamer = std::move(streamer_);
    py::gil_scoped_release release;
    streamer.reset();
  }

  bool closed() const { return !streamer_; }
  py::dict stats() const { return stats_dict(streamer_ ? streamer_->stats() : last_stats_); }
  const std::string& remote_path() const { return remote_path_; }
  const std::string& local_path() const { return local_path_; }

 private:
  static bool is_done(Wait& wait) {
    std::lock_guard lock(wait.mutex);
    return wait.done;
  }

  std::shared_ptr<Wait> start(py::object on_done) {
    if (!streamer_) throw StateError(remote_path_ + ": the streamer is closed");
    if (pending_ && !is_done(*pending_)) {
      throw StateError(remote_path_ + ": another next() is still waiting; one at a time");
    }
    auto wait = std::make_shared<Wait>();
    wait->on_done = std::move(on_done);
    pending_ = wait;
    asio::co_spawn(runner_executor(), next_of(streamer_.get()),
                   asio::bind_cancellation_slot(
                       wait->cancel.slot(),
                       [wait](std::exception_ptr error, std::optional<NamedTensor> tensor) {
                         finish(wait, error, std::move(tensor));
                       }));
    return wait;
  }

  // On the runner thread, once the wait has its result.
  static void finish(const std::shared_ptr<Wait>& wait, std::exception_ptr error,
                     std::optional<NamedTensor> tensor) {
    {
      std::lock_guard lock(wait->mutex);
      wait->error = error;
      wait->tensor = std::move(tensor);
      wait->done = true;
    }
    wait->finished.notify_all();
    // on_done is set before the wait starts and cleared only here, so reading whether it is
    // null needs no GIL.
    if (!wait->on_done) return;
    const bool delivered = with_gil([&] {
      const py::object on_done = std::move(wait->on_done);
      std::exception_ptr result_error;
      std::optional<NamedTensor> result;
      {
        std::lock_guard lock(wait->mutex);
        result_error = wait->error;
        result = std::move(wait->tensor);
      }
      if (result_error) {
        on_done(py::none(), python_exception(result_error));
      } else {
        on_done(to_python(std::move(result)), py::none());
      }
    });
    // Without the GIL, the callback cannot even be released: leak it, the process is ending.
    if (!delivered) wait->on_done.release();
  }

  // Waits for `wait` with the GIL released, waking every signal_check_interval to let Python
  // run its signal handlers: one that raises (KeyboardInterrupt) cancels the wait and is raised.
  void wait_interruptibly(const std::shared_ptr<Wait>& wait) {
    for (;;) {
      {
        py::gil_scoped_release release;
        std::unique_lock lock(wait->mutex);
        if (wait->finished.wait_for(lock, signal_check_interval, [&] { return wait->done; })) {
          return;
        }
      }
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set interrupted;
        cancel(wait);
        {
          py::gil_scoped_release release;
          wait_until_done(*wait);
        }
        throw interrupted;
      }
    }
  }

  std::string remote_path_;
  std::string local_path_;
  std::unique_ptr<SafeTensorsStreamer> streamer_;
  StreamStats last_stats_;
  std::shared_ptr<Wait> pending_;
};

}  // namespace

void bind_streamer(py::module_& module) {
  py::class_<Streamer>(module, "_Streamer")
      .def(py::init<std::string, std::string, const py::dict&>(), py::arg("remote_path"),
           py::arg("local_path"), py::arg("options"))
      .def("next", &Streamer::next)
      .def("next_async", &Streamer::next_async, py::arg("on_done"))
      .def("cancel_next", &Streamer::cancel_next)
      .def("close", &Streamer::close)
      .def_property_readonly("closed", &Streamer::closed)
      .def("stats", &Streamer::stats)
      .def_property_readonly("remote_path", &Streamer::remote_path)
      .def_property_readonly("local_path", &Streamer::local_path);
}

}  // namespace tensorstream::python
