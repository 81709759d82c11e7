#include "python/errors.hpp"

#include <boost/asio/error.hpp>
#include <cerrno>
#include <boost/system/system_error.hpp>
#include <new>
#include <string_view>

#include "python/bindings.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

py::object error_class(const char* name) {
  return py::module_::import("tensorstream.errors").attr(name);
}

// A refusal by the server (401, 403) rather than a failure to reach or read it: Python code
// expects PermissionError there, as for a file it may not open.
bool is_access_denied(const StorageError& error) {
  const std::string_view cause = error.cause();
  return cause.starts_with("HTTP 401") || cause.starts_with("HTTP 403");
}

// `error_number` as the errno of the OSError, for code that tests it; the message stays the
// exception's one argument (OSError would format "[Errno 2] ..." from more).
py::object storage_error(const char* name, const StorageError& error, int error_number = 0) {
  py::object exception = error_class(name)(error.what());
  if (error_number != 0) exception.attr("errno") = error_number;
  exception.attr("object") = error.object();
  exception.attr("cause") = error.cause();
  exception.attr("transient") = error.transient();
  return exception;
}

}  // namespace

py::object python_exception(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const NotFoundError& e) {
    return storage_error("NotFoundError", e, ENOENT);
  } catch (const StorageError& e) {
    if (is_access_denied(e)) return storage_error("AccessDeniedError", e, EACCES);
    return storage_error("StorageError", e);
  } catch (const CredentialsError& e) {
    py::object exception = error_class("CredentialsError")(e.what());
    exception.attr("service") = e.service();
    exception.attr("provider") = e.provider();
    exception.attr("cause") = e.cause();
    return exception;
  } catch (const InvalidArgument& e) {
    return error_class("InvalidArgumentError")(e.what());
  } catch (const FormatError& e) {
    return error_class("FormatError")(e.what());
  } catch (const StateError& e) {
    return error_class("StateError")(e.what());
  } catch (const Cancelled& e) {
    return error_class("CancelledError")(e.what());
  } catch (const DeadlineExceeded& e) {
    return error_class("DeadlineExceededError")(e.what());
  } catch (const Error& e) {
    return error_class("Error")(e.what());
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
