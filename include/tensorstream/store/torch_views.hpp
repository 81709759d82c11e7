#pragma once
/// @file
/// torch::Tensor views over an attached rank's mapped memory (in tensorstream::tensorstream, the
/// library linked with libtorch).

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <map>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/model/load_into_module.hpp"
#include "tensorstream/store/attached_rank.hpp"

namespace tensorstream::store {

/// Every tensor of `rank` by name, as CPU tensors over the mapped bytes: no copy, the dtype of
/// the manifest (F8_E5M2 and F8_E4M3 as uint8, libtorch 1.13 having no float8 types). Each
/// tensor keeps the rank's mappings alive (AttachedRank::keep_alive), so it stays valid after
/// `rank` is gone.
///
/// Tensors of the KV cache are writable, and writes are the server's shared memory. Tensors over
/// read-only weights are mapped PROT_READ: an in-place operation on them (add_, copy_, ...)
/// crashes the process with SIGSEGV, unless the rank was attached with
/// AttachOptions::private_weights (private copy-on-write pages).
TENSORSTREAM_API
std::map<std::string, at::Tensor> torch_tensors(const AttachedRank& rank);

/// Copies every tensor of `rank` into the parameters and buffers of `module`, with the rules of
/// load_into_tensors(); the KV cache's tensors too, so give ignore_unexpected when the module
/// holds no such buffers. For parameters that are the shared memory itself, without a copy, set
/// them to torch_tensors()' views instead.
TENSORSTREAM_API
LoadReport load_into_module(const AttachedRank& rank, torch::nn::Module& module,
                            const LoadOptions& options = {});

}  // namespace tensorstream::store
