// _attach(): a rank of a store server as torch tensors over the shared memory it passes.

#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "python/bindings.hpp"
#include "python/runner.hpp"
#include "python/tensors.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/attached_rank.hpp"
#include "tensorstream/store/torch_views.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

// async_attach() with a result co_spawn can default-construct.
boost::asio::awaitable<std::optional<store::AttachedRank>> attach_on_runner(
    std::string socket, std::uint32_t rank, store::AttachOptions options) {
  auto attaching = store::async_attach(std::move(socket), rank, std::move(options));
  co_return co_await std::move(attaching);
}

// The manifest's facts and the tensors, split into the weights and the KV cache (by region, so
// that weights mapped writable with private_weights still count as weights).
py::dict attach(const std::string& socket, std::int64_t rank, double timeout_seconds,
                bool private_weights, std::optional<std::int64_t> server_uid) {
  if (rank < 0 || rank > 1 << 20) {
    throw InvalidArgument("rank must be in [0, 1048576], got " + std::to_string(rank));
  }
  if (!std::isfinite(timeout_seconds) || timeout_seconds < 0 || timeout_seconds > 86400) {
    throw InvalidArgument("timeout must be 0 to 86400 seconds, got " +
                          std::to_string(timeout_seconds));
  }
  store::AttachOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1000));
  options.private_weights = private_weights;
  if (server_uid) {
    if (*server_uid < 0 || *server_uid > 0xfffffffe) {
      throw InvalidArgument("server_uid must be a uid, got " + std::to_string(*server_uid));
    }
    options.server_uid = static_cast<uid_t>(*server_uid);
  }
  std::optional<store::AttachedRank> attached =
      run_interruptibly<std::optional<store::AttachedRank>>([&] {
        return attach_on_runner(socket, static_cast<std::uint32_t>(rank), options);
      });
  std::map<std::string, at::Tensor> tensors;
  without_gil([&] { tensors = store::torch_tensors(*attached); });
  const store::Manifest& manifest = attached->manifest();
  py::dict weights;
  py::dict kv_cache;
  for (const auto& entry : manifest.tensors) {
    (entry.region == "kv_cache" ? kv_cache : weights)[py::str(entry.name)] =
        python_tensor(tensors.at(entry.name));
  }
  py::dict result;
  result["socket"] = socket;
  result["rank"] = manifest.rank;
  result["tensor_parallel_size"] = manifest.tensor_parallel_size;
  result["generation"] = manifest.generation;
  result["model"] = manifest.model;
  result["config_json"] = manifest.config_json;
  result["fused"] = manifest.fused;
  result["weights"] = std::move(weights);
  result["kv_cache"] = std::move(kv_cache);
  if (manifest.kv_cache) {
    py::dict info;
    info["num_layers"] = manifest.kv_cache->num_layers;
    info["num_blocks"] = manifest.kv_cache->num_blocks;
    info["block_size"] = manifest.kv_cache->block_size;
    info["kv_heads"] = manifest.kv_cache->kv_heads;
    info["head_dim"] = manifest.kv_cache->head_dim;
    info["dtype"] = std::string(dtype_name(manifest.kv_cache->dtype));
    result["kv_cache_info"] = std::move(info);
  } else {
    result["kv_cache_info"] = py::none();
  }
  return result;
}

}  // namespace

void bind_store(py::module_& module) {
  module.def("_attach", &attach, py::arg("socket"), py::arg("rank"), py::arg("timeout"),
             py::arg("private_weights"), py::arg("server_uid"));
}

}  // namespace tensorstream::python
