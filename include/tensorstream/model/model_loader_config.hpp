#pragma once
/// @file
/// The model loader's settings as a deployment gives them: environment variables compatible with
/// the Python original's `FLYTE_MODEL_LOADER_*`, and tensorstream's own `TENSORSTREAM_*`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// Where a model is, where its other artifacts go, and how its weights are read.
///
/// from_environment() reads each setting from `TENSORSTREAM_<NAME>`, else
/// `FLYTE_MODEL_LOADER_<NAME>`, else keeps the default below. An empty variable counts as unset.
/// Options given explicitly to a streamer beat both (see streamer_options()).
struct TENSORSTREAM_API ModelLoaderConfig {
  /// REMOTE_MODEL_PATH: the checkpoint's URL or prefix; unset by default.
  std::optional<std::string> remote_model_path;
  /// LOCAL_MODEL_PATH: the directory that receives config.json, the tokenizer and other
  /// non-weight artifacts (see prefetch()).
  std::string local_model_path = "/srv/model";
  /// Whether a variable set local_model_path, rather than the default: tools that write there
  /// without being told a directory (`tensorstream prefetch`) refuse the default.
  bool local_model_path_set = false;
  /// CHUNK_SIZE: bytes per range read, a positive decimal integer.
  std::uint64_t chunk_size = default_chunk_size;
  /// MAX_CONCURRENCY: range reads in flight, a positive decimal integer.
  std::size_t max_concurrency = default_max_concurrency;
  /// STREAM_SAFETENSORS: whether weights are streamed rather than downloaded; true only for the
  /// value "true" in any case, as in the Python original.
  bool stream_safetensors = false;

  /// The configuration the process environment gives. Throws InvalidArgument naming the variable
  /// and its value for a number that is not a positive decimal integer or does not fit.
  static ModelLoaderConfig from_environment();

  /// remote_model_path; InvalidArgument naming both variables when it is unset.
  const std::string& required_remote_model_path() const;

  /// local_model_path when a variable set it; InvalidArgument naming both variables otherwise.
  const std::string& required_local_model_path() const;

  /// `explicit_options` with the settings it leaves unset (chunk_size, max_concurrency) taken
  /// from this configuration.
  StreamerOptions streamer_options(StreamerOptions explicit_options = {}) const;
};

}  // namespace tensorstream
