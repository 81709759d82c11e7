#pragma once
// The thread on which the extension's waits complete, and the rules for taking and leaving the
// GIL around them.

#include <Python.h>

#include <boost/asio/any_io_executor.hpp>
#include <exception>
#include <pybind11/pybind11.h>

namespace tensorstream::python {

/// The executor of the process's one runner thread, started at first use. A stream's next()
/// is awaited there, so that a wait can be cancelled and can wake an asyncio event loop, without
/// a thread blocked per wait. The thread is never joined: it idles in epoll_wait, holding no
/// Python object, so the interpreter may exit under it.
boost::asio::any_io_executor runner_executor();

/// Whether the caller is the runner thread.
bool on_runner_thread();

/// Called at interpreter exit (tensorstream/__init__.py, after closing every live streamer):
/// from then on no wait starts, and the runner thread no longer takes the GIL.
void begin_shutdown();

/// Whether begin_shutdown() was called or the interpreter is finalizing; a thread that takes
/// the GIL then may be ended by the interpreter in the middle of C++ code.
bool shutting_down();

/// Runs `call` with the GIL on a thread that may not hold it (the runner's, the library's I/O
/// threads), unless shutting_down(): then it returns false
/// without calling. An exception from `call` is reported as unraisable, there being no caller to
/// raise it to.
template <class Call>
bool with_gil(Call&& call) {
  if (shutting_down()) return false;
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

}  // namespace tensorstream::python
