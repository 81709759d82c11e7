#pragma once
// The thread on which the extension's waits complete.

#include <boost/asio/any_io_executor.hpp>
#include <pybind11/pybind11.h>

#include <exception>

namespace tensorstream::python {

/// The executor of the process's one runner thread, started at first use. A stream's next()
/// is awaited there, so that a wait can be cancelled and can wake an asyncio event loop, without
/// a thread blocked per wait. The thread is never joined: it idles in epoll_wait, holding no
/// Python object, so the interpreter may exit under it (tensorstream/__init__.py closes every
/// live streamer at exit, so no wait is left to complete).
boost::asio::any_io_executor runner_executor();

/// Whether the interpreter is shutting down, when a thread that takes the GIL hangs.
bool interpreter_finalizing();

/// Runs `call` with the GIL on the current (runner) thread, unless the interpreter is shutting
/// down: then it returns false without calling. An exception from `call` is reported as
/// unraisable, there being no caller to raise it to.
template <class Call>
bool with_gil(Call&& call) {
  if (interpreter_finalizing()) return false;
  pybind11::gil_scoped_acquire gil;
  try {
    call();
  } catch (pybind11::error_already_set& error) {
    error.discard_as_unraisable(__func__);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    PyErr_WriteUnraisable(nullptr);
  }
  return true;
}

}  // namespace tensorstream::python
