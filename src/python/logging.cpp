// The library's log messages (retries, credential sources, ...) as records of the Python logger
// "tensorstream", so that Python's logging configuration filters, formats and routes them.

#include <cstdio>
#include <string>
#include <string_view>

#include "python/bindings.hpp"
#include "python/runner.hpp"
#include "tensorstream/log.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

int python_level(LogLevel level) {
  switch (level) {
    case LogLevel::trace:
    case LogLevel::debug:
      return 10;  // logging.DEBUG
    case LogLevel::info:
      return 20;
    case LogLevel::warning:
      return 30;
    default:
      return 40;
  }
}

void to_python_logging(LogLevel level, std::string_view message) {
  // At exit the GIL may no longer be taken: stderr, as without Python.
  const bool logged = with_gil([&] {
    py::module_::import("logging")
        .attr("getLogger")("tensorstream")
        .attr("log")(python_level(level), py::str(message.data(), message.size()));
  });
  if (!logged) {
    const std::string line = "tensorstream: " + std::string(message) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace

void bind_logging(py::module_&) { set_log_sink(to_python_logging); }

}  // namespace tensorstream::python
