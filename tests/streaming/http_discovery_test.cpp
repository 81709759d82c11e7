// Which files a stream reads over HTTP, where a prefix cannot be listed.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "streaming/checkpoint_files.hpp"
#include "support/model_loader_environment.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::NginxServer;
using testing::stream_by_name;
using testing::TempDir;
using testing::write_checkpoint;

std::set<std::string> tiny_names() {
  std::set<std::string> names;
  for (const auto& spec : llama_tensors(synthetic_preset("tiny"))) names.insert(spec.name);
  return names;
}

std::set<std::string> streamed_names(const std::string& url) {
  RawStreamer streamer(url);
  std::set<std::string> names;
  for (const auto& [name, tensor] : stream_by_name(streamer)) names.insert(name);
  return names;
}

class HttpDiscovery : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  }

  testing::ModelLoaderEnvironment environment_;
  TempDir root_;
};

TEST_F(HttpDiscovery, APrefixWithAnIndexStreamsTheIndexedShards) {
  generate_synthetic_model(root_.path() / "m", {.preset = "tiny", .shards = 3, .index = true});
  NginxServer nginx({.root = root_.path()});
  RawStreamer streamer(nginx.base_url() + "/m/");
  std::set<std::string> names;
  for (const auto& [name, tensor] : stream_by_name(streamer)) names.insert(name);
  EXPECT_EQ(names, tiny_names());
  EXPECT_EQ(streamer.stats().files, 3u);
}

TEST_F(HttpDiscovery, APrefixWithoutAnIndexStreamsModelSafetensors) {
  generate_synthetic_model(root_.path() / "m", {.preset = "tiny"});
  write_checkpoint(root_.path() / "m" / "other.safetensors", {{"unseen", 4}});
  NginxServer nginx({.root = root_.path()});
  EXPECT_EQ(streamed_names(nginx.base_url() + "/m/"), tiny_names());
}

TEST_F(HttpDiscovery, APrefixWithNeitherIndexNorModelSafetensorsNamesBoth) {
  std::filesystem::create_directory(root_.path() / "m");
  write_checkpoint(root_.path() / "m" / "model-00001-of-00001.safetensors", {{"x", 4}});
  NginxServer nginx({.root = root_.path()});
  const std::string url = nginx.base_url() + "/m/";
  try {
    streamed_names(url);
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              url + ": found neither model.safetensors.index.json nor model.safetensors, and this "
                    "store cannot list a prefix: name the file or index to stream");
  }
}

TEST_F(HttpDiscovery, AnUnusableIndexFallsBackToModelSafetensors) {
  generate_synthetic_model(root_.path() / "m", {.preset = "tiny"});
  testing::write_text(root_.path() / "m" / "model.safetensors.index.json", "{\"metadata\":{}}");
  NginxServer nginx({.root = root_.path()});
  testing::LoggedMessages warnings(LogLevel::warning);
  EXPECT_EQ(streamed_names(nginx.base_url() + "/m/"), tiny_names());
  EXPECT_EQ(warnings.messages(),
            std::vector<std::string>{nginx.base_url() +
                                     "/m/model.safetensors.index.json: no \"weight_map\"; "
                                     "streaming model.safetensors instead"});
}

TEST_F(HttpDiscovery, AUrlNamingTheIndexStreamsTheIndexedShards) {
  generate_synthetic_model(root_.path() / "m", {.preset = "tiny", .shards = 2, .index = true});
  NginxServer nginx({.root = root_.path()});
  EXPECT_EQ(streamed_names(nginx.base_url() + "/m/model.safetensors.index.json"), tiny_names());
}

TEST_F(HttpDiscovery, AForbiddenIndexIsNotTakenForAnAbsentOne) {
  generate_synthetic_model(root_.path() / "m", {.preset = "tiny"});
  NginxServer nginx({.root = root_.path(),
                     .extra_config = "location = /m/model.safetensors.index.json { return 403; }"});
  const std::string url = nginx.base_url() + "/m/";
  try {
    streamed_names(url);
    FAIL() << "expected StorageError";
  } catch (const NotFoundError& error) {
    FAIL() << "a 403 was taken for an absent index: " << error.what();
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()), url + "model.safetensors.index.json: HTTP 403 Forbidden");
  }
}

TEST_F(HttpDiscovery, RankFilesCannotBeFoundWithoutListing) {
  NginxServer nginx({.root = root_.path()});
  StreamerOptions options;
  options.tensor_parallel_size = 2;
  const std::string url = nginx.base_url() + "/m/";
  try {
    RawStreamer streamer(url, options);
    streamer.next_blocking();
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), url + ": rank files cannot be found without listing");
  }
}

}  // namespace
}  // namespace tensorstream
