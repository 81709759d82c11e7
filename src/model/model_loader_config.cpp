#include "tensorstream/model/model_loader_config.hpp"

#include "base/environment_setting.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {

ModelLoaderConfig ModelLoaderConfig::from_environment() {
  using detail::environment_setting;
  ModelLoaderConfig config;
  if (auto setting = environment_setting("REMOTE_MODEL_PATH")) {
    config.remote_model_path = setting->value;
  }
  if (auto setting = environment_setting("LOCAL_MODEL_PATH")) {
    config.local_model_path = setting->value;
    config.local_model_path_set = true;
  }
  const StreamerOptions streaming = environment_streamer_options();
  config.chunk_size = *streaming.chunk_size;
  config.max_concurrency = *streaming.max_concurrency;
  if (auto setting = environment_setting("STREAM_SAFETENSORS")) {
    config.stream_safetensors = detail::is_true(setting->value);
  }
  return config;
}

const std::string& ModelLoaderConfig::required_remote_model_path() const {
  if (!remote_model_path) {
    throw InvalidArgument(
        "no remote model path was given, and neither TENSORSTREAM_REMOTE_MODEL_PATH nor "
        "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH is set");
  }
  return *remote_model_path;
}

const std::string& ModelLoaderConfig::required_local_model_path() const {
  if (!local_model_path_set) {
    throw InvalidArgument(
        "no local directory was given, and neither TENSORSTREAM_LOCAL_MODEL_PATH nor "
        "FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH is set");
  }
  return local_model_path;
}

StreamerOptions ModelLoaderConfig::streamer_options(StreamerOptions explicit_options) const {
  if (!explicit_options.chunk_size) explicit_options.chunk_size = chunk_size;
  if (!explicit_options.max_concurrency) explicit_options.max_concurrency = max_concurrency;
  return explicit_options;
}

}  // namespace tensorstream
