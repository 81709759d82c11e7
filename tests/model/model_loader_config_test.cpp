#include "tensorstream/model/model_loader_config.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/model_loader_environment.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

class ModelLoaderConfigTest : public ::testing::Test {
 protected:
  // The message from_environment() fails with (a test failure if it does not).
  static std::string failure() {
    try {
      ModelLoaderConfig::from_environment();
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    ADD_FAILURE() << "from_environment() accepted the environment";
    return "";
  }

  testing::ModelLoaderEnvironment environment_;
};

TEST_F(ModelLoaderConfigTest, DefaultsMatchThePythonOriginal) {
  const auto config = ModelLoaderConfig::from_environment();
  EXPECT_FALSE(config.remote_model_path);
  EXPECT_EQ(config.local_model_path, "/srv/model");
  EXPECT_FALSE(config.local_model_path_set);
  EXPECT_THROW(config.required_local_model_path(), InvalidArgument);
  EXPECT_EQ(config.chunk_size, 16777216u);
  EXPECT_EQ(config.max_concurrency, 32u);
  EXPECT_FALSE(config.stream_safetensors);
}

TEST_F(ModelLoaderConfigTest, FlyteVariablesAreRead) {
  environment_.set("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", "s3://models/llama");
  environment_.set("FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH", "/data/llama");
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "8388608");
  environment_.set("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "64");
  environment_.set("FLYTE_MODEL_LOADER_STREAM_SAFETENSORS", "true");
  const auto config = ModelLoaderConfig::from_environment();
  EXPECT_EQ(config.remote_model_path, "s3://models/llama");
  EXPECT_EQ(config.local_model_path, "/data/llama");
  EXPECT_EQ(config.required_local_model_path(), "/data/llama");
  EXPECT_EQ(config.chunk_size, 8388608u);
  EXPECT_EQ(config.max_concurrency, 64u);
  EXPECT_TRUE(config.stream_safetensors);
}

TEST_F(ModelLoaderConfigTest, TensorstreamVariablesBeatFlyteOnes) {
  environment_.set("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", "s3://flyte/m");
  environment_.set("TENSORSTREAM_REMOTE_MODEL_PATH", "s3://ours/m");
  environment_.set("FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH", "/flyte");
  environment_.set("TENSORSTREAM_LOCAL_MODEL_PATH", "/ours");
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "1024");
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "2048");
  environment_.set("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "4");
  environment_.set("TENSORSTREAM_MAX_CONCURRENCY", "8");
  environment_.set("FLYTE_MODEL_LOADER_STREAM_SAFETENSORS", "true");
  environment_.set("TENSORSTREAM_STREAM_SAFETENSORS", "false");
  const auto config = ModelLoaderConfig::from_environment();
  EXPECT_EQ(config.remote_model_path, "s3://ours/m");
  EXPECT_EQ(config.local_model_path, "/ours");
  EXPECT_EQ(config.chunk_size, 2048u);
  EXPECT_EQ(config.max_concurrency, 8u);
  EXPECT_FALSE(config.stream_safetensors);
}

TEST_F(ModelLoaderConfigTest, AnEmptyVariableCountsAsUnset) {
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "");
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "4096");
  environment_.set("TENSORSTREAM_REMOTE_MODEL_PATH", "");
  const auto config = ModelLoaderConfig::from_environment();
  EXPECT_EQ(config.chunk_size, 4096u);
  EXPECT_FALSE(config.remote_model_path);
}

TEST_F(ModelLoaderConfigTest, StreamSafetensorsIsTrueOnlyForTheWordTrue) {
  for (const char* yes : {"true", "TRUE", "True", "tRuE"}) {
    environment_.set("FLYTE_MODEL_LOADER_STREAM_SAFETENSORS", yes);
    EXPECT_TRUE(ModelLoaderConfig::from_environment().stream_safetensors) << yes;
  }
  for (const char* no : {"1", "yes", "on", "false", " true", "truee"}) {
    environment_.set("FLYTE_MODEL_LOADER_STREAM_SAFETENSORS", no);
    EXPECT_FALSE(ModelLoaderConfig::from_environment().stream_safetensors) << no;
  }
}

TEST_F(ModelLoaderConfigTest, AMalformedTensorstreamValueIsNotHiddenByAValidFlyteOne) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "4096");
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "4x");
  EXPECT_EQ(failure(), "TENSORSTREAM_CHUNK_SIZE='4x' is not a positive size (e.g. 4096, 512KiB, "
                       "16MiB)");
}

// One syntax everywhere: the chunk size takes what --chunk-size takes.
TEST_F(ModelLoaderConfigTest, AChunkSizeTakesTheFlagsSizeSyntax) {
  for (const auto& [text, bytes] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"16MB", 16'000'000}, {"16MiB", 16 * 1024 * 1024}, {"512kib", 512 * 1024},
           {"4096", 4096}}) {
    environment_.set("TENSORSTREAM_CHUNK_SIZE", text);
    EXPECT_EQ(ModelLoaderConfig::from_environment().streamer_options().chunk_size, bytes) << text;
  }
}

TEST_F(ModelLoaderConfigTest, AChunkSizeBeyond64BitsIsNotASize) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "18446744073709551616");
  EXPECT_EQ(failure(), "FLYTE_MODEL_LOADER_CHUNK_SIZE='18446744073709551616' is not a positive "
                       "size (e.g. 4096, 512KiB, 16MiB)");
}

TEST_F(ModelLoaderConfigTest, RequiredRemotePathNamesBothVariables) {
  try {
    ModelLoaderConfig::from_environment().required_remote_model_path();
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "no remote model path was given, and neither TENSORSTREAM_REMOTE_MODEL_PATH nor "
              "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH is set");
  }
}

TEST_F(ModelLoaderConfigTest, ExplicitStreamerOptionsBeatTheConfiguration) {
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "2048");
  environment_.set("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "4");
  const auto config = ModelLoaderConfig::from_environment();
  StreamerOptions explicit_options;
  explicit_options.chunk_size = 100;
  const auto options = config.streamer_options(explicit_options);
  EXPECT_EQ(options.chunk_size, 100u);
  EXPECT_EQ(options.max_concurrency, 4u);
  EXPECT_EQ(config.streamer_options().chunk_size, 2048u);
}

// Every number variable rejects every malformed value with a message naming both.
struct BadNumber {
  const char* variable;
  const char* value;
};

class MalformedNumber : public ModelLoaderConfigTest,
                        public ::testing::WithParamInterface<BadNumber> {};

TEST_P(MalformedNumber, IsRejectedNamingTheVariableAndTheValue) {
  environment_.set(GetParam().variable, GetParam().value);
  const bool size = std::string(GetParam().variable).ends_with("CHUNK_SIZE");
  EXPECT_EQ(failure(), std::string(GetParam().variable) + "='" + GetParam().value + "' is not a " +
                           (size ? "positive size (e.g. 4096, 512KiB, 16MiB)"
                                 : "positive decimal integer"));
}

INSTANTIATE_TEST_SUITE_P(
    ModelLoaderConfig, MalformedNumber,
    ::testing::Values(BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", "abc"},
                      BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", "0"},
                      BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", "-1"},
                      BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", "16XB"},
                      BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", "1.5"},
                      BadNumber{"FLYTE_MODEL_LOADER_CHUNK_SIZE", " 16"},
                      BadNumber{"TENSORSTREAM_CHUNK_SIZE", "+16"},
                      BadNumber{"FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "abc"},
                      BadNumber{"FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "0"},
                      BadNumber{"FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "-4"},
                      BadNumber{"TENSORSTREAM_MAX_CONCURRENCY", "8 "}),
    // Not named `info`: the macro's own parameter of that name would be shadowed.
    [](const ::testing::TestParamInfo<BadNumber>& case_info) {
      return std::string(case_info.param.variable) + "_" + std::to_string(case_info.index);
    });

TEST_F(ModelLoaderConfigTest, AConcurrencyBeyond64BitsIsTooLarge) {
  environment_.set("TENSORSTREAM_MAX_CONCURRENCY", "99999999999999999999999");
  EXPECT_EQ(failure(), "TENSORSTREAM_MAX_CONCURRENCY='99999999999999999999999' is too large (at "
                       "most 18446744073709551615)");
}

}  // namespace
}  // namespace tensorstream
