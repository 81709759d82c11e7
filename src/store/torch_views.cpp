#include "tensorstream/store/torch_views.hpp"

#include <memory>

#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace tensorstream::store {

std::map<std::string, at::Tensor> torch_tensors(const AttachedRank& rank) {
  const std::shared_ptr<const void> keep_alive = rank.keep_alive();
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : rank.manifest().tensors) {
    // A StreamedTensor whose data shares ownership of the mappings, so that to_torch() makes the
    // tensor the streamer would, with the same dtype mapping, keeping the mappings alive.
    StreamedTensor view;
    view.info.name = entry.name;
    view.info.dtype = entry.dtype;
    view.info.shape = entry.shape;
    view.info.end = entry.bytes;
    view.object = rank.where();
    auto* data = const_cast<std::byte*>(rank.bytes(entry).data());
    view.data = std::shared_ptr<std::byte>(keep_alive, data);
    tensors.emplace(entry.name, to_torch(view));
  }
  return tensors;
}

LoadReport load_into_module(const AttachedRank& rank, torch::nn::Module& module,
                            const LoadOptions& options) {
  return tensorstream::load_into_module(
      torch_tensors(rank), rank.where() + " rank " + std::to_string(rank.manifest().rank), module,
      options);
}

}  // namespace tensorstream::store
