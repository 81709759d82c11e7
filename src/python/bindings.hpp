#pragma once
// The parts of the extension module `tensorstream._tensorstream`, each adding its functions and
// classes to the module. The Python package (tensorstream/*.py) wraps them; users import that.

#include <pybind11/pybind11.h>

namespace tensorstream::python {

/// Translation of tensorstream's C++ exceptions into the Python ones of tensorstream/errors.py.
void bind_errors(pybind11::module_& module);
/// _Streamer: a SafeTensorsStreamer with blocking and event-loop waits.
void bind_streamer(pybind11::module_& module);
/// inspect() and prefetch(), which read headers and copy artifacts.
void bind_model(pybind11::module_& module);
/// _attach(): a store server's rank as torch tensors over its shared memory.
void bind_store(pybind11::module_& module);
/// Sends the library's log messages to the Python logger "tensorstream".
void bind_logging(pybind11::module_& module);

}  // namespace tensorstream::python
