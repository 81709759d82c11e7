// inspect(), prefetch() and the model loader's environment, for Python.

#include <pybind11/stl.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "python/bindings.hpp"
#include "python/options.hpp"
#include "python/runner.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/model/model_loader_config.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/transfer/prefetch.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

py::dict tensor_dict(const TensorInfo& tensor) {
  py::dict result;
  result["dtype"] = std::string(dtype_name(tensor.dtype));
  result["shape"] = py::tuple(py::cast(tensor.shape));
  result["data_offsets"] = py::make_tuple(tensor.begin, tensor.end);
  return result;
}

// Each file as a dict: url, size, data_start, metadata and its tensors by name, in file order.
py::list inspect(const std::string& remote_path, const py::dict& options) {
  StreamerOptions streamer_options = python::streamer_options(options);
  const std::vector<FileHeader> headers = run_interruptibly<std::vector<FileHeader>>(
      [&] { return tensorstream::async_inspect(remote_path, std::move(streamer_options)); });
  py::list files;
  for (const auto& file : headers) {
    py::dict tensors;
    for (const auto& tensor : file.header.tensors) tensors[py::str(tensor.name)] = tensor_dict(tensor);
    py::dict entry;
    entry["url"] = file.url;
    entry["size"] = file.size;
    entry["data_start"] = file.header.data_start;
    entry["metadata"] = file.header.metadata;
    entry["tensors"] = std::move(tensors);
    files.append(std::move(entry));
  }
  return files;
}

py::dict prefetch(const std::string& remote_path, const std::string& local_path,
                  bool exclude_safetensors, const py::dict& options) {
  PrefetchOptions prefetch_options;
  prefetch_options.exclude_safetensors = exclude_safetensors;
  prefetch_options.store = store_options(options);
  // On a context and thread of its own: the copy writes files with blocking calls, which must
  // not hold up the runner's waits.
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  async::LibraryThread thread("ts-py-prefetch", [&io] { io.run(); });
  // Stops the context (the store may keep work of its own pending) before the thread is joined.
  struct Stop {
    boost::asio::io_context& io;
    ~Stop() { io.stop(); }
  } stop{io};
  const PrefetchResult result = run_interruptibly<PrefetchResult>(
      [&] {
        return tensorstream::prefetch(remote_path, std::filesystem::path(local_path),
                                      std::move(prefetch_options));
      },
      io.get_executor());
  py::dict copied;
  copied["files"] = result.files;
  copied["bytes"] = result.bytes;
  return copied;
}

py::dict model_loader_config() {
  const ModelLoaderConfig config = ModelLoaderConfig::from_environment();
  py::dict result;
  result["remote_model_path"] = config.remote_model_path;
  result["local_model_path"] = config.local_model_path;
  result["chunk_size"] = config.chunk_size;
  result["max_concurrency"] = config.max_concurrency;
  result["stream_safetensors"] = config.stream_safetensors;
  return result;
}

}  // namespace

void bind_model(py::module_& module) {
  module.def("_inspect", &inspect, py::arg("remote_path"), py::arg("options"));
  module.def("_prefetch", &prefetch, py::arg("remote_path"), py::arg("local_path"),
             py::arg("exclude_safetensors"), py::arg("options"));
  module.def("_model_loader_config", &model_loader_config);
}

}  // namespace tensorstream::python
