// Small neighbouring tensors of a file share one range read (streaming/read_plan.hpp): which
// reads are planned, and that every tensor still arrives exactly, in its own memory, within the
// memory limit.

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <set>

#include "streaming/forwarding_store.hpp"
#include "streaming/read_plan.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::MiB;
using testing::TempDir;
using Sizes = std::vector<std::pair<std::string, std::uint64_t>>;

// A file of U8 tensors laid out in the given order, bytes from synthetic_bytes(name).
void write_model(const std::filesystem::path& path, const Sizes& tensors) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, bytes] : tensors) {
    specs.push_back({name, Dtype::U8, {static_cast<std::int64_t>(bytes)}});
  }
  write_safetensors(path, specs, [](const TensorSpec& spec, std::uint64_t offset, std::span<std::byte> out) {
    fill_synthetic_bytes(spec.name, offset, out);
  });
}

// A header of tensors back to back, in the given order.
detail::SourceFile file_of(const Sizes& tensors) {
  detail::SourceFile file;
  std::uint64_t offset = 0;
  for (const auto& [name, bytes] : tensors) {
    file.header.tensors.push_back({name, Dtype::U8, {static_cast<std::int64_t>(bytes)}, offset,
                                   offset + bytes});
    offset += bytes;
  }
  return file;
}

// Each read as the names of its tensors.
std::vector<std::vector<std::string>> names_of(const std::vector<detail::PlannedRead>& reads) {
  std::vector<std::vector<std::string>> names;
  for (const auto& read : reads) {
    names.emplace_back();
    for (const TensorInfo* tensor : read.tensors) names.back().push_back(tensor->name);
  }
  return names;
}

TEST(ReadPlan, SmallNeighboursShareAReadThatALargeTensorEnds) {
  std::vector<detail::SourceFile> files{
      file_of({{"a", 10}, {"b", 20}, {"empty", 0}, {"c", 30}, {"big", 2 * MiB}, {"d", 5}})};
  const auto reads = detail::plan_reads(files, 16 * MiB, 512 * MiB);
  EXPECT_EQ(names_of(reads), (std::vector<std::vector<std::string>>{
                                 {"empty"}, {"d"}, {"a", "b", "c"}, {"big"}}));
  EXPECT_EQ(reads[2].begin, 0u);
  EXPECT_EQ(reads[2].length, 60u);
  EXPECT_EQ(reads[2].memory(), 120u) << "the tensors' memory and the scratch";
  EXPECT_EQ(reads[3].memory(), 2 * MiB);
}

TEST(ReadPlan, GapsUpToTheLimitAreReadAlongAndLargerOnesSplitTheRun) {
  auto file = file_of({{"a", 8}, {"skipped", detail::max_coalesced_gap}, {"b", 8},
                       {"skipped.too", detail::max_coalesced_gap + 1}, {"c", 8}});
  // Discovery drops what an index leaves out; the offsets of the rest stay.
  std::erase_if(file.header.tensors, [](const TensorInfo& t) { return t.name.starts_with("skipped"); });
  std::vector<detail::SourceFile> files{std::move(file)};
  const auto reads = detail::plan_reads(files, 16 * MiB, 512 * MiB);
  EXPECT_EQ(names_of(reads), (std::vector<std::vector<std::string>>{{"c"}, {"a", "b"}}));
  EXPECT_EQ(reads[1].length, 16 + detail::max_coalesced_gap);
}

TEST(ReadPlan, RunsStayWithinTheChunkSizeAQuarterOfTheMemoryLimitAndTheirFile) {
  std::vector<detail::SourceFile> files{file_of({{"a", 40}, {"b", 40}, {"c", 40}}),
                                        file_of({{"d", 40}, {"e", 40}})};
  EXPECT_EQ(names_of(detail::plan_reads(files, 100, 512 * MiB)),
            (std::vector<std::vector<std::string>>{{"c"}, {"a", "b"}, {"d", "e"}}));
  EXPECT_EQ(names_of(detail::plan_reads(files, 16 * MiB, 400)),
            (std::vector<std::vector<std::string>>{{"c"}, {"a", "b"}, {"d", "e"}}));
  EXPECT_EQ(names_of(detail::plan_reads(files, 16 * MiB, 100)),
            (std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}));
}

TEST(ReadPlan, FileOrderKeepsTheFilesInStreamOrderAndTheirTensorsByOffset) {
  std::vector<detail::SourceFile> files{
      file_of({{"a", 2 * MiB}, {"b", 10}, {"c", 20}, {"d", 3 * MiB}}),
      file_of({{"e", 5}, {"f", MiB}})};
  EXPECT_EQ(names_of(detail::plan_reads(files, 16 * MiB, 512 * MiB, ReadOrder::file_order)),
            (std::vector<std::vector<std::string>>{{"a"}, {"b", "c"}, {"d"}, {"e"}, {"f"}}));
  EXPECT_EQ(names_of(detail::plan_reads(files, 16 * MiB, 512 * MiB)),
            (std::vector<std::vector<std::string>>{{"e"}, {"b", "c"}, {"f"}, {"a"}, {"d"}}));
}

TEST(ReadPlan, TensorsOfAMebibyteOrMoreAreNeverCoalesced) {
  std::vector<detail::SourceFile> files{
      file_of({{"a", detail::coalesce_below - 1}, {"b", detail::coalesce_below}, {"c", 1}})};
  EXPECT_EQ(names_of(detail::plan_reads(files, 64 * MiB, 512 * MiB)),
            (std::vector<std::vector<std::string>>{{"c"}, {"a"}, {"b"}}));
}

// A FileStore counting its range reads.
class ReadCountingStore final : public testing::ForwardingStore {
 public:
  ReadCountingStore(boost::asio::any_io_executor executor, std::atomic<int>& reads)
      : ForwardingStore(std::move(executor)), reads_(reads) {}

  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    ++reads_;
    return inner_.read_range(std::move(key), offset, destination);
  }

 private:
  std::atomic<int>& reads_;
};

struct Streamed {
  std::set<std::string> names;
  int reads = 0;
  std::uint64_t peak_memory = 0;
};

// Streams `url`, checking each tensor's bytes and alignment, dropping each at once.
Streamed stream_checked(const std::string& url, StreamerOptions options) {
  std::atomic<int> reads{0};
  Streamed result;
  RawStreamer streamer(url, options, [&](const Url&, boost::asio::any_io_executor executor) {
    return std::make_unique<ReadCountingStore>(executor, reads);
  });
  while (auto tensor = streamer.next_blocking()) {
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    EXPECT_EQ(tensor->bytes().size(), expected.size()) << tensor->info.name;
    // A zero-byte tensor has no memory: memcmp must not be handed its null pointer.
    if (!expected.empty()) {
      EXPECT_EQ(std::memcmp(tensor->bytes().data(), expected.data(), expected.size()), 0)
          << "bytes differ in " << tensor->info.name;
    }
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor->data.get()) % 64, 0u) << tensor->info.name;
    EXPECT_TRUE(result.names.insert(tensor->info.name).second) << "twice: " << tensor->info.name;
  }
  const auto stats = streamer.stats();
  EXPECT_EQ(stats.bytes, stats.total_bytes) << "gaps are not tensor bytes";
  result.reads = reads.load();
  result.peak_memory = stats.peak_memory;
  return result;
}

TEST(Coalescing, SmallTensorsArriveExactFromOneReadWithGapsZeroBytesAndTheFileEnd) {
  TempDir dir;
  // Odd sizes, so that tensors sit at offsets no allocator would give them.
  write_model(dir.path() / "model.safetensors",
              {{"a", 3}, {"b", 17}, {"empty", 0}, {"unlisted", 1000}, {"c", 33}, {"d", 1},
               {"also.unlisted", 5}, {"last", 7}});
  std::ofstream(dir.path() / "model.safetensors.index.json")
      << R"({"weight_map": {"a": "model.safetensors", "b": "model.safetensors",
           "empty": "model.safetensors", "c": "model.safetensors", "d": "model.safetensors",
           "last": "model.safetensors"}})";
  const auto streamed = stream_checked(dir.path().string() + "/", {});
  EXPECT_EQ(streamed.names, (std::set<std::string>{"a", "b", "empty", "c", "d", "last"}));
  EXPECT_EQ(streamed.reads, 3) << "the index, the header, then one read for every tensor";
}

TEST(Coalescing, ManyTinyTensorsTakeAFewReadsInsteadOfOneEach) {
  TempDir dir;
  Sizes tensors;
  for (int i = 0; i < 5000; ++i) tensors.push_back({"t" + std::to_string(i), 1 + i % 13});
  write_model(dir.path() / "model.safetensors", tensors);
  StreamerOptions options;
  options.chunk_size = 8 * 1024;
  const auto streamed = stream_checked((dir.path() / "model.safetensors").string(), options);
  EXPECT_EQ(streamed.names.size(), tensors.size());
  // 34,995 bytes of tensors in runs of at most 8 KiB, after two header reads (the header is
  // longer than the first read).
  EXPECT_LE(streamed.reads, 2 + 5);
}

TEST(Coalescing, RunsRespectTheMemoryLimit) {
  TempDir dir;
  Sizes tensors;
  for (int i = 0; i < 3000; ++i) tensors.push_back({"t" + std::to_string(i), 40 + i % 50});
  write_model(dir.path() / "model.safetensors", tensors);
  StreamerOptions options;
  options.memory_limit = 4096;
  const auto streamed = stream_checked((dir.path() / "model.safetensors").string(), options);
  EXPECT_EQ(streamed.names.size(), tensors.size());
  EXPECT_LE(streamed.peak_memory, options.memory_limit);
  EXPECT_LT(streamed.reads, 3000) << "runs of a quarter of the limit still share reads";
}

}  // namespace
}  // namespace tensorstream
