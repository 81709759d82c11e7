// bench::sweep against real servers: every cell streams exactly the selected bytes with fresh
// connections, a cell that fails is recorded and the sweep goes on, bad grids fail before any
// request.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "storage/s3rver_test.hpp"
#include "streaming/checkpoint_files.hpp"
#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/bench/sweep.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::bench {
namespace {

using testing::MiB;
using testing::read_file;
using testing::FaultServer;
using testing::NginxServer;
using testing::TempDir;

constexpr std::uint64_t kib = 1024;

std::uint64_t bytes_of(const std::vector<FileHeader>& files) {
  std::uint64_t bytes = 0;
  for (const auto& file : files) {
    for (const auto& tensor : file.header.tensors) bytes += tensor.byte_size();
  }
  return bytes;
}

// What a stream with one cell's settings reports, for comparison with the cell.
StreamStats stream_once(const std::string& url, std::uint64_t chunk_size,
                        std::size_t concurrency) {
  StreamerOptions options;
  options.chunk_size = chunk_size;
  options.max_concurrency = concurrency;
  RawStreamer streamer(url, options);
  while (streamer.next_blocking()) {
  }
  return streamer.stats();
}

class SweepOverNginx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(root_.path() / "tiny", {.preset = "tiny"});
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{.root = root_.path()});
    url_ = nginx_->base_url() + "/tiny/model.safetensors";
  }

  TempDir root_;
  std::unique_ptr<NginxServer> nginx_;
  std::string url_;
};

TEST_F(SweepOverNginx, EveryCellAndCeilingReadsTheWholeModelWithFreshConnectionsEachRun) {
  const std::uint64_t model_bytes = bytes_of(inspect(url_));
  std::vector<std::pair<std::uint64_t, std::size_t>> order;
  std::vector<std::pair<std::size_t, std::size_t>> steps;
  SweepOptions options;
  options.repeat = 2;
  options.ceiling = true;
  options.seed = 11;
  options.on_run = [&](const SweepStep& step) {
    order.emplace_back(step.chunk_size, step.concurrency);
    steps.emplace_back(step.index, step.count);
  };
  const SweepResult result = sweep(url_, {{64 * kib, 1 * MiB}, {2, 8}}, options);

  EXPECT_EQ(result.url, url_);
  EXPECT_EQ(result.seed, 11u);
  EXPECT_EQ(result.io_mode, "http");
  EXPECT_EQ(result.files, 1u);
  EXPECT_EQ(result.tensors, 21u);
  EXPECT_EQ(result.bytes, model_bytes);
  EXPECT_EQ(result.model_bytes, model_bytes);
  ASSERT_EQ(result.cells.size(), 4u);
  const std::vector<std::pair<std::uint64_t, std::size_t>> grid{
      {64 * kib, 2}, {64 * kib, 8}, {1 * MiB, 2}, {1 * MiB, 8}};
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const SweepCell& cell = result.cells[i];
    SCOPED_TRACE(std::to_string(cell.chunk_size) + " x " + std::to_string(cell.concurrency));
    EXPECT_EQ(std::make_pair(cell.chunk_size, cell.concurrency), grid[i]);
    ASSERT_EQ(cell.runs.size(), 2u);
    EXPECT_FALSE(cell.failed());
    // The same requests as a stream of its own with these settings: the cell is that stream.
    const StreamStats alone = stream_once(url_, cell.chunk_size, cell.concurrency);
    for (std::size_t r = 0; r < 2; ++r) {
      const SweepRun& run = cell.runs[r];
      EXPECT_EQ(run.repeat, r);
      EXPECT_EQ(run.error, "");
      EXPECT_EQ(run.bytes, model_bytes);
      EXPECT_EQ(run.requests, alone.requests);
      EXPECT_EQ(run.retries, 0u);
      EXPECT_GE(run.connections, 1u);
      EXPECT_GT(run.gigabytes_per_second, 0);
      EXPECT_GT(run.seconds, 0);
      EXPECT_GT(run.peak_memory, 0u);
      EXPECT_LE(run.peak_memory, StreamerOptions{}.memory_limit);
    }
    EXPECT_GE(cell.median_gigabytes_per_second(), cell.min_gigabytes_per_second());
    EXPECT_LE(cell.median_gigabytes_per_second(), cell.max_gigabytes_per_second());
  }
  // Smaller chunks mean more requests for the same bytes.
  EXPECT_GT(result.cells[0].requests(), result.cells[2].requests());

  ASSERT_EQ(result.ceilings.size(), 2u);
  for (const auto& ceiling : result.ceilings) {
    ASSERT_EQ(ceiling.runs.size(), 2u);
    EXPECT_FALSE(ceiling.failed()) << ceiling.error();
    // 1 MiB, the grid's largest chunk, is already at the floor of a ceiling's ranges.
    EXPECT_EQ(ceiling.range_size, 1 * MiB);
    for (const auto& run : ceiling.runs) {
      EXPECT_EQ(run.bytes, model_bytes);
      EXPECT_EQ(run.requests, (model_bytes + MiB - 1) / MiB);
      EXPECT_GE(run.connections, 1u);
    }
  }
  EXPECT_EQ(result.ceilings[0].concurrency, 2u);
  EXPECT_EQ(result.ceiling_at(8), &result.ceilings[1]);

  // Each repeat ran every cell and ceiling once; progress counted them all.
  ASSERT_EQ(order.size(), 12u);
  const std::set<std::pair<std::uint64_t, std::size_t>> first(order.begin(), order.begin() + 6);
  const std::set<std::pair<std::uint64_t, std::size_t>> second(order.begin() + 6, order.end());
  EXPECT_EQ(first.size(), 6u);
  EXPECT_EQ(first, second);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i], std::make_pair(i + 1, std::size_t{12}));
  }

  const SweepCell* best = result.best();
  ASSERT_NE(best, nullptr);
  for (const auto& cell : result.cells) {
    EXPECT_LE(cell.median_gigabytes_per_second(), best->median_gigabytes_per_second());
  }
  EXPECT_EQ(result.best_environment(),
            "TENSORSTREAM_CHUNK_SIZE=" + std::to_string(best->chunk_size) +
                " TENSORSTREAM_MAX_CONCURRENCY=" + std::to_string(best->concurrency));
}

TEST_F(SweepOverNginx, MaxBytesReadsTheFirstTensorsThatFit) {
  const auto files = inspect(url_);
  const auto& tensors = files.at(0).header.tensors;
  // The first three tensors, and one byte short of the fourth.
  const std::uint64_t three =
      tensors[0].byte_size() + tensors[1].byte_size() + tensors[2].byte_size();
  SweepOptions options;
  options.repeat = 1;
  options.max_bytes = three + tensors[3].byte_size() - 1;
  const SweepResult result = sweep(url_, {{1 * MiB}, {4}}, options);
  EXPECT_EQ(result.tensors, 3u);
  EXPECT_EQ(result.bytes, three);
  EXPECT_EQ(result.model_tensors, tensors.size());
  EXPECT_EQ(result.model_bytes, bytes_of(files));
  ASSERT_EQ(result.cells.size(), 1u);
  EXPECT_EQ(result.cells[0].runs.at(0).bytes, three);

  // Less than the first tensor still reads that one.
  options.max_bytes = 1;
  const SweepResult one = sweep(url_, {{1 * MiB}, {4}}, options);
  EXPECT_EQ(one.tensors, 1u);
  EXPECT_EQ(one.bytes, tensors[0].byte_size());
}

TEST_F(SweepOverNginx, BadGridsAndUnreadableUrlsFailBeforeAnyRun) {
  bool ran = false;
  SweepOptions options;
  options.on_run = [&](const SweepStep&) { ran = true; };
  const auto message_of = [&](const std::string& url, const SweepGrid& grid,
                              const SweepOptions& with) -> std::string {
    try {
      sweep(url, grid, with);
    } catch (const InvalidArgument& error) {
      return std::string("InvalidArgument: ") + error.what();
    } catch (const NotFoundError& error) {
      return std::string("NotFoundError: ") + error.what();
    }
    return "no error";
  };
  EXPECT_EQ(message_of(url_, {{}, {4}}, options),
            "InvalidArgument: the list of chunk sizes is empty");
  EXPECT_EQ(message_of(url_, {{MiB}, {}}, options),
            "InvalidArgument: the list of concurrencies is empty");
  EXPECT_EQ(message_of(url_, {{MiB, 0}, {4}}, options),
            "InvalidArgument: a chunk size of 0 bytes reads nothing");
  EXPECT_EQ(message_of(url_, {{MiB}, {4, 0}}, options),
            "InvalidArgument: a concurrency of 0 reads nothing");
  SweepOptions no_repeat = options;
  no_repeat.repeat = 0;
  EXPECT_EQ(message_of(url_, {{MiB}, {4}}, no_repeat),
            "InvalidArgument: repeat must be at least 1");
  SweepOptions no_bytes = options;
  no_bytes.max_bytes = 0;
  EXPECT_EQ(message_of(url_, {{MiB}, {4}}, no_bytes),
            "InvalidArgument: max_bytes must be at least 1 byte");
  const std::string missing = nginx_->base_url() + "/absent/model.safetensors";
  const std::string error = message_of(missing, {{MiB}, {4}}, options);
  EXPECT_TRUE(error.starts_with("NotFoundError: " + missing)) << error;
  EXPECT_FALSE(ran);
}

TEST(SweepWithAFault, ACellThatFailsIsRecordedOnceAndTheOthersRunOn) {
  // One 3 MiB tensor: 1 MiB chunks read its middle mebibyte alone, which the server refuses;
  // 4 MiB chunks read it whole.
  TempDir dir;
  testing::write_checkpoint(dir.path() / "model.safetensors", {{"weight", 3 * MiB}});
  const std::uint64_t data_start =
      inspect((dir.path() / "model.safetensors").string()).at(0).header.data_start;
  const std::string refused = "bytes=" + std::to_string(data_start + MiB) + "-" +
                              std::to_string(data_start + 2 * MiB - 1);
  FaultServer server("/model.safetensors", read_file(dir.path() / "model.safetensors"),
                     {.fail_status = 404, .fail_range = refused});
  const std::string url = server.base_url() + "/model.safetensors";

  std::vector<std::pair<std::size_t, std::size_t>> steps;
  SweepOptions options;
  options.repeat = 3;
  options.ceiling = true;
  options.on_run = [&](const SweepStep& step) { steps.emplace_back(step.index, step.count); };
  const SweepResult result = sweep(url, {{1 * MiB, 4 * MiB}, {2}}, options);

  ASSERT_EQ(result.cells.size(), 2u);
  const SweepCell& small = result.cells[0];
  EXPECT_TRUE(small.failed());
  ASSERT_EQ(small.runs.size(), 1u) << "a failed cell is not run again";
  EXPECT_EQ(small.error(), url + ": HTTP 404 Not Found: injected failure");
  EXPECT_EQ(small.median_gigabytes_per_second(), 0);
  const SweepCell& large = result.cells[1];
  EXPECT_FALSE(large.failed()) << large.error();
  EXPECT_EQ(large.runs.size(), 3u);
  EXPECT_EQ(result.best(), &large);
  // The ceiling reads the tensor in two halves of 2 MiB, which the server does not refuse.
  ASSERT_EQ(result.ceilings.size(), 1u);
  EXPECT_EQ(result.ceilings[0].range_size, 2 * MiB);
  EXPECT_FALSE(result.ceilings[0].failed()) << result.ceilings[0].error();

  // Progress counts what the failure left out: 3 runs of 3 items, less the 2 the cell skipped.
  ASSERT_EQ(steps.size(), 7u);
  EXPECT_EQ(steps.back(), std::make_pair(std::size_t{7}, std::size_t{7}));
}

class SweepOverS3rver : public s3::testing::S3rverTest {};

TEST_F(SweepOverS3rver, EveryCellStreamsTheShardedModel) {
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny", .shards = 2, .index = true});
  s3rver_->put_directory("models", "tiny/", model.path());
  const std::string url = "s3://models/tiny/";
  const std::uint64_t model_bytes = bytes_of(inspect(url));
  SweepOptions options;
  options.repeat = 1;
  options.ceiling = true;
  const SweepResult result = sweep(url, {{256 * kib, 1 * MiB}, {2, 8}}, options);
  EXPECT_EQ(result.files, 2u);
  EXPECT_EQ(result.bytes, model_bytes);
  ASSERT_EQ(result.cells.size(), 4u);
  for (const auto& cell : result.cells) {
    ASSERT_FALSE(cell.failed()) << cell.error();
    EXPECT_EQ(cell.runs.at(0).bytes, model_bytes);
    EXPECT_EQ(cell.runs.at(0).requests, stream_once(url, cell.chunk_size, cell.concurrency).requests);
  }
  for (const auto& ceiling : result.ceilings) {
    ASSERT_FALSE(ceiling.failed()) << ceiling.error();
    EXPECT_EQ(ceiling.runs.at(0).bytes, model_bytes);
  }
  EXPECT_NE(result.best(), nullptr);
}

}  // namespace
}  // namespace tensorstream::bench
