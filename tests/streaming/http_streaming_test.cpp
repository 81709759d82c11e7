// Whole streams over real sockets: nginx over http and https, and a misbehaving server.

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "support/certificates.hpp"
#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/held_read_server.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "streaming/synthetic_stream.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::Certificates;
using testing::FaultServer;
using testing::NginxServer;
using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

// A tiny synthetic checkpoint as one string, for the fault server to serve.
std::string tiny_model_file() {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  return testing::read_file(dir.path() / "model.safetensors");
}

class HttpStreaming : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(models_.path() / "tiny", {.preset = "tiny"});
  }

  // nginx serving the models over https with a CA made for this test, or nullptr (and the test
  // skipped) without the openssl command.
  std::unique_ptr<NginxServer> start_https() {
    if (!Certificates::available()) return nullptr;
    certificates_ = Certificates::generate(pki_.path());
    return std::make_unique<NginxServer>(NginxServer::Options{
        .root = models_.path(),
        .certificate = certificates_.server_certificate,
        .key = certificates_.server_key});
  }

  TempDir models_;
  TempDir pki_;
  Certificates certificates_;
};

TEST_F(HttpStreaming, FileUrlStreamsByteExactOverHttp) {
  NginxServer nginx({.root = models_.path()});
  RawStreamer streamer(nginx.base_url() + "/tiny/model.safetensors", small_chunks());
  expect_whole_model(streamer);
  const auto stats = streamer.stats();
  EXPECT_EQ(stats.io_mode, "http");
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_LE(stats.connections, 8u) << "connections are reused";
}

// Many small chunks completing on several I/O threads at once: the HTTP client must hand every
// completion back to the stream's strand (a regression: it once resumed the stream on the
// connection's strand, racing the stream's own state).
TEST_F(HttpStreaming, ManySmallChunksOnSeveralIoThreadsStayExact) {
  NginxServer nginx({.root = models_.path()});
  StreamerOptions options;
  options.chunk_size = 4096;
  options.max_concurrency = 32;
  options.io_threads = 4;
  RawStreamer streamer(nginx.base_url() + "/tiny/model.safetensors", options);
  expect_whole_model(streamer);
}

TEST_F(HttpStreaming, PrefixUrlStreamsModelSafetensorsUnderIt) {
  NginxServer nginx({.root = models_.path()});
  RawStreamer streamer(nginx.base_url() + "/tiny/", small_chunks());
  expect_whole_model(streamer);
}

TEST_F(HttpStreaming, StreamsByteExactOverHttpsWithTheTestsCa) {
  const auto nginx = start_https();
  if (!nginx) TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
  StreamerOptions options = small_chunks();
  options.store.http().ca_file = certificates_.ca.string();
  RawStreamer streamer(nginx->base_url() + "/tiny/model.safetensors", options);
  expect_whole_model(streamer);
}

TEST_F(HttpStreaming, HttpsWithAnUntrustedCaFailsNamingTheCause) {
  const auto nginx = start_https();
  if (!nginx) TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
  StreamerOptions options;
  options.store.http().ca_file = certificates_.other_ca.string();
  const auto url = nginx->base_url() + "/tiny/model.safetensors";
  RawStreamer streamer(url, options);
  try {
    streamer.next_blocking();
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(url), std::string::npos) << message;
    EXPECT_NE(message.find("certificate verify failed"), std::string::npos) << message;
  }
}

TEST_F(HttpStreaming, MissingObjectIsNotFoundNamingTheUrl) {
  NginxServer nginx({.root = models_.path()});
  const auto url = nginx.base_url() + "/tiny/absent.safetensors";
  RawStreamer streamer(url);
  try {
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_NE(std::string(error.what()).find(url), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("404"), std::string::npos) << error.what();
  }
}

TEST_F(HttpStreaming, ServerIgnoringRangeStillGivesExactBytes) {
  NginxServer nginx({.root = models_.path(), .extra_config = "location / { max_ranges 0; }"});
  RawStreamer streamer(nginx.base_url() + "/tiny/model.safetensors", small_chunks());
  expect_whole_model(streamer);
}

TEST(HttpStreamingFaults, TransientFailuresAreRetriedAndTheStreamIsExact) {
  FaultServer server("/model.safetensors", tiny_model_file(),
                     {.fail_first = 2, .truncate_first = 5, .truncate_after = 1000});
  StreamerOptions options = small_chunks();
  options.store.http().retry_base_delay = std::chrono::milliseconds(1);
  options.store.http().throttle_base_delay = std::chrono::milliseconds(1);
  RawStreamer streamer(server.base_url() + "/model.safetensors", options);
  expect_whole_model(streamer);
  EXPECT_GE(streamer.stats().retries, 2u);
}

TEST(HttpStreamingFaults, AlwaysTruncatedBodyFailsNamingTheCause) {
  FaultServer server("/model.safetensors", tiny_model_file(),
                     {.truncate_first = FaultServer::always, .truncate_after = 10});
  StreamerOptions options;
  options.store.http().retry_base_delay = std::chrono::milliseconds(1);
  options.store.http().retry_max_delay = std::chrono::milliseconds(2);
  RawStreamer streamer(server.base_url() + "/model.safetensors", options);
  try {
    streamer.next_blocking();
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("/model.safetensors"), std::string::npos);
  }
}

TEST(HttpStreamingFaults, UnreachableHostFailsQuicklyWithACause) {
  const auto port = testing::pick_free_port();
  StreamerOptions options;
  options.store.http().retry_base_delay = std::chrono::milliseconds(1);
  options.store.http().retry_max_delay = std::chrono::milliseconds(2);
  RawStreamer streamer("http://127.0.0.1:" + std::to_string(port) + "/m.safetensors", options);
  try {
    streamer.next_blocking();
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_NE(std::string(error.what()).find("refused"), std::string::npos) << error.what();
  }
}

// Progress displays poll the count: over a slow link it must move within a read, not jump once
// per finished chunk. The server sends part of the one read and holds the rest until the test
// has seen that part counted, so nothing here depends on timing.
TEST(HttpStreamingProgress, BytesCountAsTheyLandBeforeTheirReadCompletes) {
  TempDir dir;
  constexpr std::uint64_t tensor_bytes = 256 * 1024;
  constexpr std::uint64_t sent = 100000;
  const auto held_server = testing::serve_one_tensor_holding_its_read(dir.path(), tensor_bytes, sent);
  testing::FaultServer& server = *held_server;

  StreamerOptions options;
  options.chunk_size = 1 << 20;
  RawStreamer streamer(server.base_url() + "/one.safetensors", options);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  StreamStats stats = streamer.stats();
  while (stats.bytes < sent && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stats = streamer.stats();
  }
  EXPECT_EQ(stats.bytes, sent) << "the held read's first part is counted";
  EXPECT_EQ(stats.total_bytes, tensor_bytes);
  EXPECT_EQ(stats.tensors, 0u);

  server.resume();
  const auto tensor = streamer.next_blocking();
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->info.byte_size(), tensor_bytes);
  EXPECT_FALSE(streamer.next_blocking());
  EXPECT_EQ(streamer.stats().bytes, tensor_bytes);
}

}  // namespace
}  // namespace tensorstream
