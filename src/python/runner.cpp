#include "python/runner.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

namespace asio = boost::asio;

namespace tensorstream::python {

asio::any_io_executor runner_executor() {
  struct Runner {
    asio::io_context context{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
    Runner() {
      std::thread([this] { context.run(); }).detach();
    }
  };
  // Leaked on purpose: destroying the context at exit would race the detached thread.
  static Runner* const runner = new Runner;
  return runner->context.get_executor();
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

}  // namespace tensorstream::python
