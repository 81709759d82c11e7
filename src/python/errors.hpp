#pragma once
// C++ exceptions as the Python exceptions of tensorstream/errors.py.

#include <pybind11/pybind11.h>

#include <exception>

namespace tensorstream::python {

/// The Python exception object for `error`: tensorstream's errors as the classes of
/// tensorstream.errors (NotFoundError is a FileNotFoundError, and so on), Asio's cancellation as
/// asyncio.CancelledError, anything else as RuntimeError, each with the C++ message. Needs the GIL.
pybind11::object python_exception(std::exception_ptr error);

/// Raises python_exception(error) as the current Python error. Needs the GIL.
void set_python_error(std::exception_ptr error);

}  // namespace tensorstream::python
