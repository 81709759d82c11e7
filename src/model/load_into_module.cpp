#include "tensorstream/model/load_into_module.hpp"

#include <torch/csrc/autograd/grad_mode.h>

#include <utility>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

std::string shape_string(at::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// Copies streamed tensors into their targets one at a time and keeps the account.
class Loader {
 public:
  Loader(const std::map<std::string, at::Tensor>& targets, const LoadOptions& options,
         std::string source)
      : targets_(targets), options_(options), source_(std::move(source)) {}

  void load(const std::string& name, const at::Tensor& tensor) {
    const auto target_name = map_name(name);
    const auto target = targets_.find(target_name);
    if (target == targets_.end()) {
      if (!options_.ignore_unexpected) {
        throw InvalidArgument("unexpected tensor " + label(name, target_name) + " from " + source_ +
                              ": no parameter or buffer has that name");
      }
      report_.ignored.push_back(name);
      return;
    }
    const auto [earlier, inserted] = filled_.emplace(target_name, name);
    if (!inserted) {
      throw InvalidArgument("tensor " + label(name, target_name) + ": " + json_string(target_name) +
                            " was already loaded from " + json_string(earlier->second));
    }
    copy(name, target_name, tensor, target->second);
    ++report_.tensors;
    report_.bytes += tensor.nbytes();
  }

  LoadReport finish() {
    for (const auto& [name, tensor] : targets_) {
      if (!filled_.contains(name)) report_.missing.push_back(name);
    }
    if (options_.strict && !report_.missing.empty()) {
      std::string keys;
      for (const auto& name : report_.missing) {
        keys += (keys.empty() ? "" : ", ") + json_string(name);
      }
      throw InvalidArgument("Missing keys (never streamed from " + source_ + "): " + keys);
    }
    return std::move(report_);
  }

 private:
  std::string map_name(const std::string& name) const {
    const auto& strip = options_.strip_prefix;
    const bool stripped = !strip.empty() && name.starts_with(strip);
    return options_.add_prefix + name.substr(stripped ? strip.size() : 0);
  }

  // `"model.x"`, or `"model.x" (as "x")` when mapping renamed it.
  static std::string label(const std::string& name, const std::string& target_name) {
    auto text = json_string(name);
    if (target_name != name) text += " (as " + json_string(target_name) + ")";
    return text;
  }

  // Copies into the target, narrowed where the streamed tensor is smaller.
  void copy(const std::string& name, const std::string& target_name, const at::Tensor& tensor,
            const at::Tensor& target) const {
    if (tensor.scalar_type() != target.scalar_type() && !options_.convert_dtype) {
      throw InvalidArgument(
          "tensor " + label(name, target_name) + ": dtype " +
          std::string(c10::toString(tensor.scalar_type())) + " differs from the target's " +
          std::string(c10::toString(target.scalar_type())) + " (convert_dtype converts it)");
    }
    const bool fits = tensor.dim() == target.dim() && [&] {
      for (std::int64_t dim = 0; dim < tensor.dim(); ++dim) {
        if (tensor.size(dim) > target.size(dim)) return false;
      }
      return true;
    }();
    if (!fits) {
      throw InvalidArgument("tensor " + label(name, target_name) + ": streamed shape " +
                            shape_string(tensor.sizes()) + " does not fit the target's shape " +
                            shape_string(target.sizes()));
    }
    at::Tensor view = target;
    for (std::int64_t dim = 0; dim < tensor.dim(); ++dim) {
      if (tensor.size(dim) < target.size(dim)) view = view.narrow(dim, 0, tensor.size(dim));
    }
    // Per copy rather than per load: a coroutine may resume on another thread, and the guard's
    // mode is thread-local.
    torch::NoGradGuard no_grad;
    view.copy_(tensor);
  }

  const std::map<std::string, at::Tensor>& targets_;
  const LoadOptions& options_;
  std::string source_;
  std::map<std::string, std::string> filled_;  // target name → streamed name
  LoadReport report_;
};

std::map<std::string, at::Tensor> module_targets(const torch::nn::Module& module) {
  std::map<std::string, at::Tensor> targets;
  for (const auto& item : module.named_parameters()) targets.emplace(item.key(), item.value());
  for (const auto& item : module.named_buffers()) targets.emplace(item.key(), item.value());
  return targets;
}

}  // namespace

boost::asio::awaitable<LoadReport> load_into_tensors(
    SafeTensorsStreamer& streamer, const std::map<std::string, at::Tensor>& targets,
    LoadOptions options) {
  Loader loader(targets, options, streamer.remote_path());
  while (auto tensor = co_await streamer.next()) loader.load(tensor->first, tensor->second);
  co_return loader.finish();
}

LoadReport load_into_tensors_blocking(SafeTensorsStreamer& streamer,
                                      const std::map<std::string, at::Tensor>& targets,
                                      const LoadOptions& options) {
  Loader loader(targets, options, streamer.remote_path());
  while (auto tensor = streamer.next_blocking()) loader.load(tensor->first, tensor->second);
  return loader.finish();
}

boost::asio::awaitable<LoadReport> load_into_module(SafeTensorsStreamer& streamer,
                                                    torch::nn::Module& module,
                                                    LoadOptions options) {
  const auto targets = module_targets(module);
  co_return co_await load_into_tensors(streamer, targets, std::move(options));
}

LoadReport load_into_module_blocking(SafeTensorsStreamer& streamer, torch::nn::Module& module,
                                     const LoadOptions& options) {
  return load_into_tensors_blocking(streamer, module_targets(module), options);
}

LoadReport load_into_module(const std::map<std::string, at::Tensor>& tensors,
                            const std::string& source, torch::nn::Module& module,
                            const LoadOptions& options) {
  const auto targets = module_targets(module);
  Loader loader(targets, options, source);
  for (const auto& [name, tensor] : tensors) loader.load(name, tensor);
  return loader.finish();
}

}  // namespace tensorstream
