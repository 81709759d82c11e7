#include "tensorstream/streaming/raw_streamer.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "streaming/synthetic_stream.hpp"
#include "streaming/gated_store.hpp"
#include "streaming/recording_store.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/inspect.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;
using testing::expect_synthetic;

std::vector<StreamedTensor> stream_all(RawStreamer& streamer) {
  std::vector<StreamedTensor> tensors;
  while (auto tensor = streamer.next_blocking()) tensors.push_back(std::move(*tensor));
  return tensors;
}

std::set<std::string> names_of(const std::vector<TensorSpec>& specs) {
  std::set<std::string> names;
  for (const auto& spec : specs) names.insert(spec.name);
  return names;
}

// A file of named tensors whose bytes are `fill(name)` repeated.
void write_u8_tensors(const std::filesystem::path& path,
                const std::vector<std::pair<std::string, std::uint64_t>>& tensors,
                std::byte fill = std::byte{7}) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, bytes] : tensors) {
    specs.push_back({name, Dtype::U8, {static_cast<std::int64_t>(bytes)}});
  }
  write_safetensors(path, specs, [fill](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), fill);
  });
}

StreamerOptions chunks_of_64_kib() {
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  options.max_concurrency = 8;
  return options;
}

TEST(RawStreamer, StreamsEveryTensorOfAShardedModelByteExact) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 3});
  RawStreamer streamer(dir.path().string() + "/", chunks_of_64_kib());
  const auto tensors = stream_all(streamer);

  std::set<std::string> names;
  for (const auto& tensor : tensors) {
    names.insert(tensor.info.name);
    expect_synthetic(tensor);
  }
  EXPECT_EQ(names, names_of(llama_tensors(synthetic_preset("tiny"))));
  EXPECT_EQ(tensors.size(), names.size());
  const auto stats = streamer.stats();
  EXPECT_EQ(stats.files, 3u);
  EXPECT_EQ(stats.tensors, tensors.size());
  EXPECT_EQ(stats.bytes, stats.total_bytes);
  EXPECT_GE(stats.first_tensor_seconds, 0.0);
  EXPECT_LE(stats.first_tensor_seconds, stats.elapsed_seconds);
}

TEST(RawStreamer, OneByteChunksAndZeroByteTensorsAreExact) {
  TempDir dir;
  const auto path = dir.path() / "edge.safetensors";
  std::vector<TensorSpec> specs{{"empty", Dtype::F32, {0, 4}},
                                {"one", Dtype::U8, {1}},
                                {"seven", Dtype::I8, {7}},
                                {"scalar", Dtype::F64, {}}};
  write_safetensors(path, specs, [](const TensorSpec& spec, std::uint64_t offset, std::span<std::byte> out) {
    fill_synthetic_bytes(spec.name, offset, out);
  });
  StreamerOptions options;
  options.chunk_size = 1;
  RawStreamer streamer("file://" + path.string(), options);
  std::map<std::string, StreamedTensor> tensors;
  for (auto& tensor : stream_all(streamer)) tensors.emplace(tensor.info.name, tensor);
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors.at("empty").info.byte_size(), 0u);
  EXPECT_NE(tensors.at("empty").data, nullptr);
  EXPECT_EQ(tensors.at("empty").info.shape, (std::vector<std::int64_t>{0, 4}));
  for (const auto& [name, tensor] : tensors) expect_synthetic(tensor);
  EXPECT_EQ(streamer.stats().bytes, 16u);
}

TEST(RawStreamer, ADirectoryNamedWithoutSlashIsAPrefix) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  RawStreamer streamer(dir.path().string(), chunks_of_64_kib());
  EXPECT_EQ(stream_all(streamer).size(), llama_tensors(synthetic_preset("tiny")).size());
}

TEST(RawStreamer, FirstFileInLexicographicOrderWinsForDuplicateNames) {
  TempDir dir;
  write_u8_tensors(dir.path() / "b.safetensors", {{"shared", 16}, {"only_b", 4}}, std::byte{2});
  write_u8_tensors(dir.path() / "a.safetensors", {{"shared", 16}, {"only_a", 4}}, std::byte{1});
  RawStreamer streamer(dir.path().string() + "/");
  std::map<std::string, StreamedTensor> tensors;
  for (auto& tensor : stream_all(streamer)) {
    ASSERT_TRUE(tensors.emplace(tensor.info.name, tensor).second) << "yielded twice: " << tensor.info.name;
  }
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors.at("shared").bytes()[0], std::byte{1});
  EXPECT_NE(tensors.at("shared").object.find("a.safetensors"), std::string::npos);
}

TEST(RawStreamer, PrefixWithoutSafetensorsFilesNamesThePattern) {
  TempDir dir;
  std::ofstream(dir.path() / "config.json") << "{}";
  RawStreamer streamer(dir.path().string() + "/");
  try {
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_NE(std::string(error.what()).find("no files found matching pattern: *.safetensors"),
              std::string::npos)
        << error.what();
  }
}

TEST(RawStreamer, MissingFileIsNotFoundNamingThePath) {
  TempDir dir;
  const auto path = (dir.path() / "absent.safetensors").string();
  RawStreamer streamer(path);
  try {
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

TEST(RawStreamer, MalformedHeaderIsAFormatErrorNamingTheFile) {
  TempDir dir;
  const auto path = dir.path() / "bad.safetensors";
  const std::string json = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,7]}})";
  std::string bytes(8, '\0');
  const std::uint64_t length = json.size();
  std::memcpy(bytes.data(), &length, 8);
  std::ofstream(path, std::ios::binary) << bytes << json << std::string(7, '\0');
  RawStreamer streamer(path.string());
  try {
    streamer.next_blocking();
    FAIL() << "expected FormatError";
  } catch (const FormatError& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST(RawStreamer, UnsupportedSchemeIsRejectedAtConstruction) {
  EXPECT_THROW(RawStreamer("ftp://host/model.safetensors"), InvalidArgument);
}

TEST(RawStreamer, InvalidOptionsAreRejectedAtConstruction) {
  StreamerOptions options;
  options.chunk_size = 0;
  EXPECT_THROW(RawStreamer("/tmp/x.safetensors", options), InvalidArgument);
  options = {};
  options.tensor_parallel_size = 2;
  options.rank = 2;
  EXPECT_THROW(RawStreamer("/tmp/", options), InvalidArgument);
}

TEST(RawStreamer, TensorParallelRankStreamsOnlyItsRankFiles) {
  TempDir dir;
  write_u8_tensors(dir.path() / "model-rank-0-part-0.safetensors", {{"w", 8}}, std::byte{10});
  write_u8_tensors(dir.path() / "model-rank-1-part-0.safetensors", {{"w", 8}}, std::byte{11});
  write_u8_tensors(dir.path() / "model-rank-1-part-1.safetensors", {{"v", 4}}, std::byte{12});
  write_u8_tensors(dir.path() / "model.safetensors", {{"w", 8}}, std::byte{13});
  StreamerOptions options;
  options.tensor_parallel_size = 2;
  options.rank = 1;
  RawStreamer streamer(dir.path().string() + "/", options);
  std::map<std::string, std::byte> first_bytes;
  for (auto& tensor : stream_all(streamer)) first_bytes[tensor.info.name] = tensor.bytes()[0];
  EXPECT_EQ(first_bytes, (std::map<std::string, std::byte>{{"v", std::byte{12}}, {"w", std::byte{11}}}));

  options.rank = 0;
  options.tensor_parallel_size = 4;
  TempDir empty;
  RawStreamer none(empty.path().string() + "/", options);
  try {
    none.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_NE(std::string(error.what()).find("model-rank-0-part-*.safetensors"), std::string::npos);
  }
}

TEST(RawStreamer, PreadFallbackStreamsByteExactAndSaysSo) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  StreamerOptions options = chunks_of_64_kib();
  options.store.file().use_io_uring = false;
  RawStreamer streamer(dir.path().string(), options);
  for (const auto& tensor : stream_all(streamer)) expect_synthetic(tensor);
  EXPECT_EQ(streamer.stats().io_mode.rfind("pread", 0), 0u) << streamer.stats().io_mode;
}

TEST(RawStreamer, IoUringModeIsReportedWhereAvailable) {
  const auto reason = FileStore::io_uring_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "io_uring unavailable here: " << reason;
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  RawStreamer streamer(dir.path().string(), chunks_of_64_kib());
  for (const auto& tensor : stream_all(streamer)) expect_synthetic(tensor);
  EXPECT_EQ(streamer.stats().io_mode, "io_uring");
}

// A big tensor first in the file, held back by the store, and small ones after it.
struct GatedModel {
  TempDir dir;
  std::filesystem::path path = dir.path() / "model.safetensors";
  GatedStore* store = nullptr;
  std::atomic<int> cancelled_reads{0};

  GatedModel() {
    write_u8_tensors(path,
                     {{"big", 1 << 20}, {"small.0", 100}, {"small.1", 200}, {"small.2", 300}});
  }

  std::unique_ptr<RawStreamer> open(StreamerOptions options = {}) {
    const auto header = inspect(path.string()).at(0).header;
    const auto& big = header.tensors.at(0);
    options.io_threads = 1;
    options.chunk_size = 256 * 1024;
    return std::make_unique<RawStreamer>(path.string(), options, [&, big, start = header.data_start](
                                                    const Url&, boost::asio::any_io_executor executor) {
      auto gated = std::make_unique<GatedStore>(executor, path.string(), start + big.begin,
                                                start + big.end, cancelled_reads);
      store = gated.get();
      return gated;
    });
  }
};

TEST(RawStreamer, ASlowBigTensorDoesNotHoldBackSmallOnes) {
  GatedModel model;
  auto streamer_ptr = model.open();
  RawStreamer& streamer = *streamer_ptr;
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) order.push_back(streamer.next_blocking().value().info.name);
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()),
            (std::set<std::string>{"small.0", "small.1", "small.2"}));
  EXPECT_GT(model.store->held_reads(), 0);
  model.store->open();
  const auto big = streamer.next_blocking();
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->info.name, "big");
  EXPECT_FALSE(streamer.next_blocking().has_value());
}

TEST(RawStreamer, DestroyingTheStreamerCancelsOutstandingReads) {
  GatedModel model;
  auto streamer = model.open();
  const StreamedTensor kept = streamer->next_blocking().value();
  while (model.store->held_reads() < 4) std::this_thread::yield();
  streamer.reset();
  EXPECT_EQ(model.cancelled_reads.load(), 4);
  EXPECT_EQ(kept.bytes()[0], std::byte{7}) << "a yielded tensor outlives its stream";
}

// Memory is taken when the readers reach a tensor, not as far ahead as the limit allows: memory
// taken early sits unread, and fresh pages cost a zeroing each where recycled ones would do.
TEST(RawStreamer, ATensorsMemoryIsTakenWhenTheReadersReachIt) {
  TempDir dir;
  const auto path = dir.path() / "model.safetensors";
  std::vector<std::pair<std::string, std::uint64_t>> tensors;
  for (int i = 0; i < 8; ++i) tensors.emplace_back("t." + std::to_string(i), 1 << 20);
  write_u8_tensors(path, tensors);
  const auto header = inspect(path.string()).at(0).header;
  StreamerOptions options;
  options.io_threads = 1;
  options.chunk_size = 256 * 1024;
  options.max_concurrency = 2;
  options.memory_limit = 64 << 20;
  std::atomic<int> cancelled_reads{0};
  GatedStore* store = nullptr;
  RawStreamer streamer(path.string(), options,
                       [&](const Url&, boost::asio::any_io_executor executor) {
                         auto gated = std::make_unique<GatedStore>(
                             executor, path.string(), header.data_start,
                             header.data_start + (8 << 20), cancelled_reads);
                         store = gated.get();
                         return gated;
                       });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (store == nullptr || store->held_reads() < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the readers never reached the gate";
    std::this_thread::yield();
  }
  // Both readers hold a chunk of t.0 and two more of its chunks wait for them: the next tensor is
  // not due yet, though the limit would take all eight.
  EXPECT_EQ(streamer.stats().peak_memory, 1u << 20);
  store->open();
  std::set<std::string> names;
  while (auto tensor = streamer.next_blocking()) {
    EXPECT_EQ(tensor->bytes()[(1 << 20) - 1], std::byte{7});
    names.insert(tensor->info.name);
  }
  EXPECT_EQ(names.size(), 8u);
}

TEST(RawStreamer, MemoryStaysWithinTheLimitWithASlowConsumer) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  StreamerOptions options = chunks_of_64_kib();
  options.memory_limit = 1 << 20;
  RawStreamer streamer(dir.path().string(), options);
  std::size_t count = 0;
  while (auto tensor = streamer.next_blocking()) {
    expect_synthetic(*tensor);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++count;
  }
  EXPECT_EQ(count, llama_tensors(synthetic_preset("tiny")).size());
  EXPECT_LE(streamer.stats().peak_memory, options.memory_limit);
  EXPECT_GT(streamer.stats().peak_memory, 0u);
}

TEST(RawStreamer, ATensorLargerThanTheLimitLoadsAlone) {
  TempDir dir;
  write_u8_tensors(dir.path() / "m.safetensors", {{"a", 5000}, {"b", 3000}, {"c", 100}});
  StreamerOptions options;
  options.memory_limit = 1000;
  RawStreamer streamer(dir.path().string(), options);
  std::size_t count = 0;
  while (auto tensor = streamer.next_blocking()) ++count;
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(streamer.stats().peak_memory, 5000u);
}

// The natural `kept[name] = tensor` loop works whatever the model's size: the limit bounds what
// the stream holds, and kept tensors are the consumer's.
TEST(RawStreamer, AConsumerKeepingEveryTensorCompletesByDefault) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  StreamerOptions options = chunks_of_64_kib();
  options.memory_limit = 256 * 1024;  // the tiny model is about 4 MiB, its largest tensor 1 MiB
  RawStreamer streamer(dir.path().string(), options);
  std::vector<StreamedTensor> kept;
  while (auto tensor = streamer.next_blocking()) kept.push_back(std::move(*tensor));
  ASSERT_EQ(kept.size(), llama_tensors(synthetic_preset("tiny")).size());
  for (const auto& tensor : kept) expect_synthetic(tensor);
  std::uint64_t largest = 0;
  for (const auto& tensor : kept) largest = std::max(largest, tensor.info.byte_size());
  EXPECT_LE(streamer.stats().peak_memory, std::max<std::uint64_t>(options.memory_limit, largest));
}

TEST(RawStreamer, UntilReleasedAccountingGivesAConsumerHoldingEveryTensorAnErrorNotAHang) {
  TempDir dir;
  write_u8_tensors(dir.path() / "m.safetensors", {{"a", 400}, {"b", 400}, {"c", 400}});
  StreamerOptions options;
  options.memory_limit = 1000;
  options.memory_accounting = MemoryAccounting::until_released;
  RawStreamer streamer(dir.path().string(), options);
  std::vector<StreamedTensor> kept;
  try {
    while (auto tensor = streamer.next_blocking()) kept.push_back(std::move(*tensor));
    FAIL() << "expected an Error about memory_limit";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("memory_limit"), std::string::npos) << error.what();
  }
  EXPECT_EQ(kept.size(), 2u);
}

TEST(RawStreamer, CoroutineNextResumesOnTheCallersExecutor) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  RawStreamer streamer(dir.path().string(), chunks_of_64_kib());
  boost::asio::io_context service;
  std::thread::id service_thread;
  auto done = boost::asio::co_spawn(
      service,
      [&]() -> boost::asio::awaitable<std::size_t> {
        std::size_t count = 0;
        while (auto tensor = co_await streamer.next()) {
          EXPECT_EQ(std::this_thread::get_id(), service_thread);
          expect_synthetic(*tensor);
          ++count;
        }
        co_return count;
      },
      boost::asio::use_future);
  std::thread runner([&] {
    service_thread = std::this_thread::get_id();
    service.run();
  });
  runner.join();
  EXPECT_EQ(done.get(), llama_tensors(synthetic_preset("tiny")).size());
}


TEST(RawStreamer, ASelectionLoadsOnlyItsTensorsAndRequestsOnlyTheirBytes) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2, .index = true});
  const std::set<std::string> chosen{"lm_head.weight", "model.norm.weight"};
  StreamerOptions options;
  options.io_threads = 1;  // the recording store counts on one thread
  std::vector<std::string> asked;
  options.select = [&](const TensorInfo& tensor, const std::string& object) {
    asked.push_back(object.substr(object.rfind('/') + 1) + ":" + tensor.name);
    return chosen.contains(tensor.name);
  };
  const auto headers = inspect(dir.path().string(), options);
  std::uint64_t chosen_bytes = 0;
  std::string chosen_file;
  std::uint64_t first_byte = UINT64_MAX;  // of the chosen tensors in their file
  std::uint64_t last_byte = 0;
  for (const auto& file : headers) {
    for (const auto& tensor : file.header.tensors) {
      EXPECT_TRUE(chosen.contains(tensor.name)) << tensor.name;
      chosen_bytes += tensor.byte_size();
      chosen_file = file.url;
      first_byte = std::min(first_byte, file.header.data_start + tensor.begin);
      last_byte = std::max(last_byte, file.header.data_start + tensor.end);
    }
  }
  ASSERT_EQ(headers.size(), 1u) << "the shard holding neither tensor is left out";
  EXPECT_EQ(asked.size(), llama_tensors(synthetic_preset("tiny")).size())
      << "asked once per tensor";

  testing::RecordingStore* recorder = nullptr;
  RawStreamer streamer(dir.path().string(), options, [&](const Url&, boost::asio::any_io_executor executor) {
    auto store = std::make_unique<testing::RecordingStore>(executor);
    recorder = store.get();
    return store;
  });
  std::set<std::string> names;
  for (const auto& tensor : stream_all(streamer)) {
    expect_synthetic(tensor);
    names.insert(tensor.info.name);
  }
  EXPECT_EQ(names, chosen);
  const StreamStats stats = streamer.stats();
  EXPECT_EQ(stats.total_tensors, 2u);
  EXPECT_EQ(stats.total_bytes, chosen_bytes);
  EXPECT_EQ(stats.files, 1u);
  // Beyond the headers (read from offset 0), only the chosen tensors' bytes were read.
  std::uint64_t tensor_reads = 0;
  for (const auto& read : recorder->reads()) {
    if (read.offset == 0) continue;
    EXPECT_EQ(read.key, chosen_file);
    EXPECT_GE(read.offset, first_byte);
    EXPECT_LE(read.offset + read.length, last_byte);
    tensor_reads += read.length;
  }
  EXPECT_EQ(tensor_reads, chosen_bytes);
}

}  // namespace
}  // namespace tensorstream
