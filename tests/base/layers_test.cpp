// The include layers of scripts/check_layers.py hold for the tree as it is, and the check refuses
// an include that runs upward, a private header in a public one, and a batching file that
// reaches into storage: a check that could not fail would prove nothing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_process;

const std::string check_layers =
    std::string(TENSORSTREAM_SOURCE_DIR) + "/scripts/check_layers.py";

// A tree of its own: include/tensorstream/ and src/ with the given files.
class LayerTree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(root_.path() / "include" / "tensorstream");
    std::filesystem::create_directories(root_.path() / "src");
  }

  void write(const std::string& path, const std::string& text) {
    const auto file = root_.path() / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  testing::ProcessResult check() {
    return run_process({"/usr/bin/env", "python3", check_layers, root_.path()});
  }

  testing::TempDir root_;
};

TEST(Layers, EveryIncludeOfTheTreeRunsDownward) {
  const auto result =
      run_process({"/usr/bin/env", "python3", check_layers, TENSORSTREAM_SOURCE_DIR});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "every include runs downward\n");
}

TEST_F(LayerTree, ARootWithoutTheTreeIsAnErrorNotAPass) {
  const auto elsewhere = root_.path() / "elsewhere";
  std::filesystem::create_directories(elsewhere);
  const auto result = run_process({"/usr/bin/env", "python3", check_layers, elsewhere});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "check_layers.py: error: " + elsewhere.string() +
                            " has no include/tensorstream/ and src/\n");
}

TEST_F(LayerTree, DownwardIncludesPass) {
  write("include/tensorstream/storage/url.hpp", "#pragma once\n");
  write("src/streaming/discovery.cpp", "#include \"tensorstream/storage/url.hpp\"\n");
  write("src/model/prefetch.cpp",
        "#include \"streaming/discovery.hpp\"\n#include \"base/byte_size.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 0) << result.out;
}

TEST_F(LayerTree, AnUpwardIncludeFailsNamingTheLine) {
  write("src/streaming/raw_streamer.cpp",
        "#include <string>\n#include \"tensorstream/model/model_loader_config.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, (root_.path() / "src/streaming/raw_streamer.cpp").string() +
                            ":2: streaming includes \"tensorstream/model/model_loader_config.hpp\" "
                            "from model, a layer above it or beside it\n");
  EXPECT_EQ(result.err, "1 include(s) break the layers\n");
}

TEST_F(LayerTree, BatchingMayNotReachIntoStorage) {
  write("include/tensorstream/batching/dynamic_batcher.hpp",
        "#include \"tensorstream/storage/url.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find(":1: batching includes \"tensorstream/storage/url.hpp\" from storage"),
            std::string::npos)
      << result.out;
}

TEST_F(LayerTree, BatchingMayNotUseTheBaseFilesOfTheCoreLibrary) {
  // byte_size is compiled into tensorstream_core, which tensorstream_batching does not link.
  write("src/batching/pipeline.cpp",
        "#include \"tensorstream/log.hpp\"\n#include \"base/byte_size.hpp\"\n");
  write("src/async/gate.cpp", "#include \"base/exception_message.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, (root_.path() / "src/batching/pipeline.cpp").string() +
                            ":2: batching includes \"base/byte_size.hpp\" from base, a layer "
                            "above it or beside it\n");
}

TEST_F(LayerTree, ModelDoesNotReachIntoTransfer) {
  write("include/tensorstream/transfer/prefetch.hpp", "#pragma once\n");
  write("src/transfer/prefetch.cpp", "#include \"model/unlisted_model_files.hpp\"\n");
  write("src/model/partition_checkpoint.cpp", "#include \"tensorstream/transfer/prefetch.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, (root_.path() / "src/model/partition_checkpoint.cpp").string() +
                            ":1: model includes \"tensorstream/transfer/prefetch.hpp\" from "
                            "transfer, a layer above it or beside it\n");
}

TEST_F(LayerTree, NoFileSitsAtTheTopOfSrc) {
  write("include/tensorstream/log.hpp", "#pragma once\n");
  write("src/byte_size.cpp", "#include \"tensorstream/log.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, (root_.path() / "src/byte_size.cpp").string() +
                            ": a file at the top of src/ (move it into its room, e.g. src/base/)\n");
}

TEST_F(LayerTree, AnAngleBracketIncludeCountsToo) {
  write("src/storage/url.cpp",
        "#include <string>\n#include <tensorstream/streaming/inspect.hpp>\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find("url.cpp:2: storage includes \"tensorstream/streaming/inspect.hpp\""),
            std::string::npos)
      << result.out;
}

TEST_F(LayerTree, APublicHeaderMayNotIncludeAPrivateOne) {
  write("include/tensorstream/storage/http_store.hpp",
        "#include \"storage/http/http_client.hpp\"\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find("http_store.hpp:1: public header includes private "
                            "\"storage/http/http_client.hpp\""),
            std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace tensorstream
