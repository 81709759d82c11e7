#include "python/errors.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <new>
#include <utility>

#include "python/bindings.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

py::object error_class(const char* name) {
  return py::module_::import("tensorstream.errors").attr(name);
}

// The class of tensorstream.errors for `kind`, and the errno its OSError carries (0: none).
std::pair<const char*, int> python_class(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::not_found:
      return {"NotFoundError", ENOENT};
    case ErrorKind::access_denied:
      return {"AccessDeniedError", EACCES};
    case ErrorKind::storage:
      return {"StorageError", 0};
    case ErrorKind::credentials:
      return {"CredentialsError", 0};
    case ErrorKind::invalid_argument:
      return {"InvalidArgumentError", 0};
    case ErrorKind::format:
      return {"FormatError", 0};
    case ErrorKind::state:
      return {"StateError", 0};
    case ErrorKind::cancelled:
      return {"CancelledError", 0};
    case ErrorKind::deadline_exceeded:
      return {"DeadlineExceededError", 0};
    case ErrorKind::other:
      break;
  }
  return {"Error", 0};
}

// The Python exception of `error`, by its kind. A StorageError's attributes and errno (as the
// OSError's, for code that tests it) are set on the exception; its message stays its one
// argument, since OSError would format "[Errno 2] ..." from more.
py::object library_exception(const Error& error) {
  const auto [name, error_number] = python_class(error.kind());
  py::object exception = error_class(name)(error.what());
  if (error_number != 0) exception.attr("errno") = error_number;
  if (const auto* storage = dynamic_cast<const StorageError*>(&error)) {
    exception.attr("object") = storage->object();
    exception.attr("cause") = storage->cause();
    exception.attr("transient") = storage->transient();
  } else if (const auto* credentials = dynamic_cast<const CredentialsError*>(&error)) {
    exception.attr("service") = credentials->service();
    exception.attr("provider") = credentials->provider();
    exception.attr("cause") = credentials->cause();
  }
  return exception;
}

}  // namespace

py::object python_exception(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return library_exception(e);
  } catch (const boost::system::system_error& e) {
    if (e.code() == boost::asio::error::operation_aborted) {
      return py::module_::import("asyncio").attr("CancelledError")();
    }
    return py::module_::import("builtins").attr("RuntimeError")(e.what());
  } catch (const std::bad_alloc&) {
    return py::module_::import("builtins").attr("MemoryError")();
  } catch (const py::error_already_set& e) {
    return e.value();
  } catch (const std::exception& e) {
    return py::module_::import("builtins").attr("RuntimeError")(e.what());
  }
}

void set_python_error(std::exception_ptr error) {
  const py::object exception = python_exception(error);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
}

void bind_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const Error&) {
      set_python_error(error);
    } catch (const boost::system::system_error&) {
      set_python_error(error);
    }
    // Anything else rethrows here, to pybind11's own translators.
  });
}

}  // namespace tensorstream::python
