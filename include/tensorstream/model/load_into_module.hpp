#pragma once
/// @file
/// Loading a streamed checkpoint into a libtorch module's parameters and buffers, tensor by tensor
/// as they arrive: peak memory is the module plus the stream's memory_limit, not two copies.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace tensorstream {

/// How streamed tensors are matched to and copied into their targets.
struct LoadOptions {
  /// Targets (parameters and buffers) that no streamed tensor filled are an error
  /// ("Missing keys ..."); without it they are listed in LoadReport::missing.
  bool strict = true;
  /// Streamed tensors with no target of their (mapped) name are skipped and listed in
  /// LoadReport::ignored; without it the first one is an error.
  bool ignore_unexpected = false;
  /// A dtype that differs from the target's is converted by the copy; without it, it is an error.
  bool convert_dtype = false;
  /// Removed from the start of streamed names that begin with it ("model.").
  std::string strip_prefix{};
  /// Then put in front of every streamed name.
  std::string add_prefix{};
};

/// What a load did.
struct LoadReport {
  std::size_t tensors = 0;           ///< Streamed tensors copied into a target.
  std::uint64_t bytes = 0;           ///< Their bytes, as streamed.
  std::vector<std::string> ignored;  ///< Streamed names skipped (ignore_unexpected), in order.
  std::vector<std::string> missing;  ///< Targets never filled (not strict), sorted.
};

/// Streams every tensor of `streamer` into `targets`, the tensors of a state dict by name, each
/// copied into its target and released as soon as it arrives. `streamer` and `targets` must
/// outlive the returned awaitable.
///
/// A streamed name is mapped by `options` (strip_prefix, then add_prefix) to a target name. A
/// streamed tensor with a dimension smaller than its target's fills the target narrowed to it
/// (`narrow(dim, 0, size)`), as a rank's slice of a tensor-parallel checkpoint fills its
/// parameter; a different number of dimensions or a larger dimension is an InvalidArgument
/// naming the tensor and both shapes. Copies run under torch::NoGradGuard, so parameters that
/// require gradients can be filled. Two streamed tensors for one target are an InvalidArgument;
/// so are the other failures described with LoadOptions. The stream's own errors propagate.
/// Resumes on the awaiting coroutine's executor and never blocks its thread.
TENSORSTREAM_API
boost::asio::awaitable<LoadReport> load_into_tensors(
    SafeTensorsStreamer& streamer, const std::map<std::string, at::Tensor>& targets,
    LoadOptions options = {});

/// Like load_into_tensors(), blocking the calling thread; must not be called from a coroutine.
TENSORSTREAM_API
LoadReport load_into_tensors_blocking(SafeTensorsStreamer& streamer,
                                      const std::map<std::string, at::Tensor>& targets,
                                      const LoadOptions& options = {});

/// Streams every tensor of `streamer` into the parameters and buffers of `module` and its
/// submodules, named as `module.named_parameters()` and `module.named_buffers()` name them
/// ("layers.0.mlp.up_proj.weight"); see load_into_tensors() for the rules. `streamer` and
/// `module` must outlive the returned awaitable. With GCC 12, pass `options` as a named
/// variable, not a braced list inside the `co_await`: GCC 12 destroys such a temporary twice.
///
/// @code
/// tensorstream::SafeTensorsStreamer streamer("https://host/models/llama/");
/// const tensorstream::LoadOptions options{.strip_prefix = "model."};
/// const auto report = co_await tensorstream::load_into_module(streamer, llama, options);
/// @endcode
TENSORSTREAM_API
boost::asio::awaitable<LoadReport> load_into_module(SafeTensorsStreamer& streamer,
                                                    torch::nn::Module& module,
                                                    LoadOptions options = {});

/// Like load_into_module(), blocking the calling thread; must not be called from a coroutine.
TENSORSTREAM_API
LoadReport load_into_module_blocking(SafeTensorsStreamer& streamer, torch::nn::Module& module,
                                     const LoadOptions& options = {});

/// Copies `tensors`, already in memory and named as streamed (store::torch_tensors() of an
/// attached rank, say), into the parameters and buffers of `module`, with the rules of
/// load_into_tensors(). `source` names where they came from in error messages.
TENSORSTREAM_API
LoadReport load_into_module(const std::map<std::string, at::Tensor>& tensors,
                            const std::string& source, torch::nn::Module& module,
                            const LoadOptions& options = {});

}  // namespace tensorstream
