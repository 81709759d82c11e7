// A stream that reads its file with direct I/O: every tensor's exact bytes, in memory aligned as
// the file so that the reads land in place, whatever the header's length and the chunk size.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::MiB;

// Each byte tells its tensor and its place in it, so a byte read into the wrong place shows.
std::byte expected_byte(const std::string& name, std::uint64_t offset) {
  return std::byte(static_cast<unsigned char>((name.size() * 31 + offset) % 251));
}

class DirectIoStream : public ::testing::Test {
 protected:
  void SetUp() override {
    // Small tensors (read together into scratch memory), large ones of odd sizes, and a header
    // whose length puts the data region off any block boundary.
    specs_ = {{"a", Dtype::U8, {100}},
              {"bb", Dtype::U8, {std::int64_t{MiB} + 5}},
              {"ccc", Dtype::U8, {3 * std::int64_t{MiB}}},
              {"dddd", Dtype::U8, {5000}},
              {"eeeee", Dtype::U8, {2 * std::int64_t{MiB} + 7}},
              {"ffffff", Dtype::U8, {4 * std::int64_t{MiB}}}};
    write_safetensors(path_, specs_,
                      [](const TensorSpec& tensor, std::uint64_t offset,
                         std::span<std::byte> out) {
                        for (std::size_t i = 0; i < out.size(); ++i) {
                          out[i] = expected_byte(tensor.name, offset + i);
                        }
                      });
    data_start_ = encode_header(specs_).size();
    boost::asio::io_context context;
    FileOptions options;
    options.direct_io = DirectIo::on;
    FileStore store(context.get_executor(), options);
    if (store.memory_alignment(path_.string()) == 0) {
      GTEST_SKIP() << "the file system of " << directory_.path() << " refuses O_DIRECT";
    }
  }

  StreamerOptions options(DirectIo mode) const {
    StreamerOptions options;
    options.store.file().direct_io = mode;
    options.memory_limit = 8 * MiB;
    options.chunk_size = MiB + 3;  // Chunks that start and end off block boundaries.
    options.max_concurrency = 4;
    options.io_threads = 1;
    return options;
  }

  testing::TempDir directory_;
  std::filesystem::path path_ = directory_.path() / "model.safetensors";
  std::vector<TensorSpec> specs_;
  std::uint64_t data_start_ = 0;
};

TEST_F(DirectIoStream, EveryTensorHasItsBytesInMemoryAlignedAsTheFile) {
  RawStreamer streamer(path_.string(), options(DirectIo::on));
  std::uint64_t large_bytes = 0;
  int tensors = 0;
  while (auto tensor = streamer.next_blocking()) {
    ++tensors;
    const auto bytes = tensor->bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] != expected_byte(tensor->info.name, i)) {
        ADD_FAILURE() << tensor->info.name << " differs at byte " << i;
        break;
      }
    }
    if (bytes.size() < MiB) continue;
    large_bytes += bytes.size();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes.data()) % 4096,
              (data_start_ + tensor->info.begin) % 4096)
        << tensor->info.name;
  }
  EXPECT_EQ(tensors, 6);
  const StreamStats stats = streamer.stats();
  EXPECT_GE(stats.direct_bytes, large_bytes);
  // Discovery's first read (64 KiB from the start, header and the first tensors' bytes) lands
  // directly too where its buffer happens to be page-aligned, as sanitizers' allocators make it.
  EXPECT_LE(stats.direct_bytes, std::filesystem::file_size(path_) + 64 * 1024);
}

TEST_F(DirectIoStream, OffReadsThroughThePageCacheInto64ByteAlignedMemory) {
  RawStreamer streamer(path_.string(), options(DirectIo::off));
  while (auto tensor = streamer.next_blocking()) {
    EXPECT_EQ(tensor->bytes().back(),
              expected_byte(tensor->info.name, tensor->info.byte_size() - 1));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor->bytes().data()) % 64, 0u);
  }
  EXPECT_EQ(streamer.stats().direct_bytes, 0u);
}

}  // namespace
}  // namespace tensorstream
