#pragma once
// The extension's two threads (the runner, on which waits complete, and the Python thread, the
// only one that takes the GIL on the library's behalf) and the rules for leaving the GIL.

#include <Python.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <pybind11/pybind11.h>

namespace tensorstream::python {

/// The executor of the process's one runner thread, started at first use. A stream's next()
/// is awaited there, so that a wait can be cancelled and can wake an asyncio event loop, without
/// a thread blocked per wait. It never takes the GIL, and is never joined: it idles in
/// epoll_wait, holding no Python object, so the interpreter may exit under it.
boost::asio::any_io_executor runner_executor();

/// Called with the GIL at interpreter exit (tensorstream/__init__.py, before closing every live
/// streamer, and before the interpreter finalizes): from then on no stream or wait starts, and
/// no call takes the GIL (see call_python()). Lets the call that has it, if any, end first.
void begin_shutdown();

/// Whether begin_shutdown() was called or the interpreter is finalizing; a thread that takes
/// the GIL then may be ended by the interpreter in the middle of C++ code.
bool shutting_down();

/// Queues `call` for the extension's Python thread, which runs the queued calls in order, each
/// with the GIL: `call(true)`. Once shutting_down(), calls run without the GIL, as `call(false)`,
/// and must then leak the Python objects they hold rather than release them. Never blocks.
///
/// Only that thread takes the GIL on the library's behalf, never the runner or the I/O threads:
/// the interpreter ends a thread that takes the GIL while it exits, by a forced unwind, which
/// Asio's handler frames (catch (...) without rethrow) would turn into an abort. The Python
/// thread is a plain thread with no such frame, so the unwind just ends it.
void call_python(std::function<void(bool with_gil)> call);

/// Whether the caller is the thread of call_python(): a call there must not wait for a later one.
bool on_python_thread();

/// Runs `call()` with the GIL, reporting a Python exception from it as unraisable (there is no
/// caller to raise it to). For the calls of call_python().
template <class Call>
void reporting_errors(Call&& call) {
  try {
    call();
  } catch (pybind11::error_already_set& error) {
    error.discard_as_unraisable(__func__);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    PyErr_WriteUnraisable(nullptr);
  }
}

/// Runs `call` with the GIL released, on a Python thread that holds it. Not an RAII guard on
/// purpose: a daemon thread that takes the GIL back while the interpreter exits is ended with a
/// forced unwind, which a destructor (noexcept) would turn into std::terminate, and which an
/// ordinary call lets through to pybind11, which lets it pass.
template <class Call>
void without_gil(Call&& call) {
  PyThreadState* const state = PyEval_SaveThread();
  try {
    call();
  } catch (...) {
    PyEval_RestoreThread(state);
    throw;
  }
  PyEval_RestoreThread(state);
}

/// Runs the coroutine `make()` returns on `executor` (by default the runner's) and waits for it
/// with the GIL released, waking every 100 ms to let Python run its signal handlers, as a
/// stream's next() does: one that raises (Ctrl-C's KeyboardInterrupt) cancels the coroutine,
/// waits for it to end, and is raised. Returns the coroutine's result or rethrows what it threw.
/// Call with the GIL held.
template <class T, class Make>
T run_interruptibly(Make make, boost::asio::any_io_executor executor = runner_executor()) {
  namespace asio = boost::asio;
  // Emitted on the runner only: a cancellation signal is not thread-safe.
  auto cancel = std::make_shared<asio::cancellation_signal>();
  auto running = make();
  std::future<T> result = asio::co_spawn(executor, std::move(running),
                                         asio::bind_cancellation_slot(cancel->slot(),
                                                                      asio::use_future));
  for (;;) {
    std::future_status status = std::future_status::timeout;
    without_gil([&] { status = result.wait_for(std::chrono::milliseconds(100)); });
    if (status == std::future_status::ready) return result.get();
    if (PyErr_CheckSignals() != 0) {
      pybind11::error_already_set interrupted;
      asio::post(executor, [cancel] { cancel->emit(asio::cancellation_type::terminal); });
      without_gil([&] { result.wait(); });
      throw interrupted;
    }
  }
}

}  // namespace tensorstream::python
