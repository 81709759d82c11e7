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

// Called on the library's threads: the record is made on the Python thread, so that no I/O
// thread waits for the GIL.
void to_python_logging(LogLevel level, std::string_view message) {
  call_python([level, text = std::string(message)](bool with_gil) {
    if (!with_gil) {  // at exit: stderr, as without Python
      const std::string line = "tensorstream: " + text + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
      return;
    }
    reporting_errors([&] {
      py::module_::import("logging")
          .attr("getLogger")("tensorstream")
          .attr("log")(python_level(level), py::str(text));
    });
  });
}

}  // namespace

void bind_logging(py::module_&) { set_log_sink(to_python_logging); }

}  // namespace tensorstream::python
