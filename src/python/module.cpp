#include "python/bindings.hpp"

PYBIND11_MODULE(_tensorstream, module) {
  module.doc() =
      "The C++ core of the tensorstream package; import tensorstream, which wraps it, instead.";
  tensorstream::python::bind_errors(module);
  tensorstream::python::bind_streamer(module);
  tensorstream::python::bind_model(module);
  tensorstream::python::bind_store(module);
  tensorstream::python::bind_logging(module);
}
