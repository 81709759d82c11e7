// The examples are what users copy: each runs to the end on its default model, and reports a
// bad URL (or argument) on stderr with a non-zero exit instead of hanging or aborting.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::run_process;

std::string example(const std::string& name) {
  return std::string(TENSORSTREAM_EXAMPLES_DIR) + "/example_" + name;
}

class Examples : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(TENSORSTREAM_EXAMPLES_DIR).empty()) {
      GTEST_SKIP() << "the examples are not built (TENSORSTREAM_BUILD_EXAMPLES=OFF)";
    }
  }
};

constexpr const char* missing = "/nonexistent/tensorstream-example/model.safetensors";

TEST_F(Examples, SyncLoopStreamsItsDefaultModel) {
  const auto result = run_process({example("sync_loop")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(lines_of(result.out).back().starts_with("21 tensors in ")) << result.out;
}

TEST_F(Examples, SyncLoopReportsABadUrl) {
  const auto result = run_process({example("sync_loop"), missing});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("example_sync_loop: error: " + std::string(missing), 0), 0u)
      << result.err;
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
}

TEST_F(Examples, CoroutineServiceStreamsOnTheServicesContext) {
  const auto result = run_process({example("coroutine_service")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(lines_of(result.out).back().starts_with("21 tensors, ")) << result.out;
}

TEST_F(Examples, CoroutineServiceReportsABadUrl) {
  const auto result = run_process({example("coroutine_service"), missing});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("example_coroutine_service: error: " + std::string(missing), 0), 0u)
      << result.err;
}

TEST_F(Examples, FillModuleFillsEveryParameter) {
  const auto result = run_process({example("fill_module")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(result.out.starts_with("filled 21 parameters")) << result.out;
}

TEST_F(Examples, FillModuleReportsABadUrl) {
  const auto result = run_process({example("fill_module"), missing});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("example_fill_module: error: " + std::string(missing), 0), 0u)
      << result.err;
}

TEST_F(Examples, BatchingServiceReportsABadArgument) {
  const auto result = run_process({example("batching_service"), "many"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "example_batching_service: error: 'many' is not a number of clients\n");
}

TEST_F(Examples, BatchingServiceAnswersEveryClient) {
  const auto result = run_process({example("batching_service"), "4"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("4 prompts, "), std::string::npos) << result.out;
}

}  // namespace
}  // namespace tensorstream
