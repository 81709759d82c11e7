#pragma once
// A clean model-loader environment for one test, restored afterwards.

#include "support/scoped_environment.hpp"

namespace tensorstream::testing {

/// Unsets every variable ModelLoaderConfig::from_environment() reads, in both spellings, so that
/// the machine's settings stay out of the test; set() changes them (child processes started
/// meanwhile inherit the changes); the destructor restores them all.
class ModelLoaderEnvironment : public ScopedEnvironment {
 public:
  ModelLoaderEnvironment()
      : ScopedEnvironment({"TENSORSTREAM_REMOTE_MODEL_PATH", "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH",
                           "TENSORSTREAM_LOCAL_MODEL_PATH", "FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH",
                           "TENSORSTREAM_CHUNK_SIZE", "FLYTE_MODEL_LOADER_CHUNK_SIZE",
                           "TENSORSTREAM_MAX_CONCURRENCY", "FLYTE_MODEL_LOADER_MAX_CONCURRENCY",
                           "TENSORSTREAM_STREAM_SAFETENSORS",
                           "FLYTE_MODEL_LOADER_STREAM_SAFETENSORS"}) {}
};

}  // namespace tensorstream::testing
