// TRAW sources: a single object, a shard's prefix, a model's prefix with a partition chosen by
// tensor_parallel_size and rank, and the errors of prefixes that hold the wrong things.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "streaming/checkpoint_files.hpp"
#include "streaming/discovery.hpp"
#include "streaming/recording_store.hpp"
#include "streaming/traw_files.hpp"
#include "streaming/traw_source.hpp"
#include "support/model_loader_environment.hpp"
#include "support/nginx_server.hpp"
#include "support/run_task.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::expect_traw_shard;
using testing::partition_options;
using testing::shard_offset;
using testing::stream_error;
using testing::TempDir;
using testing::write_checkpoint;
using testing::write_text;
using testing::write_traw;
using testing::write_traw_shard;
using testing::write_traw_tree;

class TrawStreaming : public ::testing::Test {
 protected:
  std::string prefix() const { return dir_.path().string() + "/"; }
  std::string path(const std::string& name) const { return prefix() + name; }

  // Settings of the environment must not change what these tests stream.
  testing::ModelLoaderEnvironment environment_;
  TempDir dir_;
};

TEST_F(TrawStreaming, ASingleObjectIsOneTensorNamedAfterIt) {
  const std::vector<std::byte> data{std::byte{1}, std::byte{2}, std::byte{3},
                                    std::byte{4}, std::byte{5}, std::byte{6}};
  write_traw(path("layer.0.weight.bin"), {3, 1}, Dtype::F16, data);
  for (const auto& url : {path("layer.0.weight.bin"), "file://" + path("layer.0.weight.bin")}) {
    RawStreamer streamer(url);
    const auto tensor = streamer.next_blocking();
    ASSERT_TRUE(tensor) << url;
    EXPECT_EQ(tensor->info.name, "layer.0.weight");
    EXPECT_EQ(tensor->info.dtype, Dtype::F16);
    EXPECT_EQ(tensor->info.shape, (std::vector<std::int64_t>{3, 1}));
    EXPECT_EQ(std::vector<std::byte>(tensor->bytes().begin(), tensor->bytes().end()), data);
    EXPECT_EQ(tensor->object, path("layer.0.weight.bin"));
    EXPECT_FALSE(streamer.next_blocking());
  }
}

TEST_F(TrawStreaming, EveryDtypeStreamsWithItsShape) {
  for (const Dtype dtype :
       {Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64, Dtype::I8, Dtype::U8, Dtype::I16,
        Dtype::I32, Dtype::I64, Dtype::BOOL, Dtype::F8_E4M3, Dtype::F8_E5M2}) {
    const std::string name = "t_" + std::string(dtype_name(dtype));
    const auto data = synthetic_bytes(name, 0, 2 * 3 * 5 * element_size(dtype));
    write_traw(path(name + ".bin"), {2, 3, 5}, dtype, data);
  }
  RawStreamer streamer(prefix());
  std::size_t count = 0;
  while (auto tensor = streamer.next_blocking()) {
    const std::string dtype(dtype_name(tensor->info.dtype));
    EXPECT_EQ(tensor->info.name, "t_" + dtype);
    EXPECT_EQ(tensor->info.shape, (std::vector<std::int64_t>{2, 3, 5}));
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    EXPECT_EQ(std::vector<std::byte>(tensor->bytes().begin(), tensor->bytes().end()), expected)
        << dtype;
    ++count;
  }
  EXPECT_EQ(count, 12u);
}

TEST_F(TrawStreaming, AShardPrefixStreamsEveryObjectDirectlyUnderIt) {
  write_traw_shard(dir_.path() / "TP4" / "shard1", shard_offset(4, 1));
  // Neither another kind of file nor a deeper object belongs to the shard.
  write_text(path("TP4/shard1/README.md"), "notes");
  write_traw_shard(dir_.path() / "TP4" / "shard1" / "old", 7);
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  RawStreamer streamer(path("TP4/shard1/"), options);
  expect_traw_shard(streamer, shard_offset(4, 1));
  EXPECT_EQ(streamer.stats().files, llama_tensors(synthetic_preset("tiny")).size());
}

TEST_F(TrawStreaming, AShardPrefixGivenWithItsOwnPartitionStreams) {
  write_traw_shard(dir_.path() / "TP2" / "shard1", shard_offset(2, 1));
  RawStreamer streamer(path("TP2/shard1"), partition_options(2, 1));
  expect_traw_shard(streamer, shard_offset(2, 1));
}

TEST_F(TrawStreaming, AModelPrefixStreamsThePartitionTheOptionsSelect) {
  write_traw_tree(dir_.path(), {1, 2, 4});
  write_text(path("config.json"), "{}");
  for (const auto& [size, rank] :
       std::vector<std::pair<int, int>>{{1, 0}, {2, 1}, {4, 0}, {4, 3}}) {
    SCOPED_TRACE("TP" + std::to_string(size) + " rank " + std::to_string(rank));
    RawStreamer streamer(prefix(), partition_options(size, rank));
    expect_traw_shard(streamer, shard_offset(size, rank));
  }
}

TEST_F(TrawStreaming, TheSameBytesStreamIdenticallyAsTrawAndAsSafetensors) {
  generate_synthetic_model(dir_.path() / "safetensors", {.preset = "tiny", .shards = 2});
  write_traw_shard(dir_.path() / "traw", 0);
  std::map<std::string, StreamedTensor> from_safetensors;
  RawStreamer safetensors(path("safetensors/"));
  while (auto tensor = safetensors.next_blocking()) {
    const std::string name = tensor->info.name;
    from_safetensors.emplace(name, std::move(*tensor));
  }
  RawStreamer traw(path("traw/"));
  std::size_t count = 0;
  while (auto tensor = traw.next_blocking()) {
    const auto other = from_safetensors.find(tensor->info.name);
    ASSERT_NE(other, from_safetensors.end()) << tensor->info.name;
    const TensorInfo& a = tensor->info;
    const TensorInfo& b = other->second.info;
    EXPECT_EQ(a.dtype, b.dtype) << a.name;
    EXPECT_EQ(a.shape, b.shape) << a.name;
    EXPECT_EQ(std::vector<std::byte>(tensor->bytes().begin(), tensor->bytes().end()),
              std::vector<std::byte>(other->second.bytes().begin(), other->second.bytes().end()))
        << a.name;
    ++count;
  }
  EXPECT_EQ(count, from_safetensors.size());
}

TEST_F(TrawStreaming, MemoryStaysWithinTheLimitWithASlowConsumer) {
  write_traw_tree(dir_.path(), {2});
  StreamerOptions options = partition_options(2, 0);
  options.memory_limit = 1 << 20;
  options.max_concurrency = 8;
  RawStreamer streamer(prefix(), options);
  std::size_t count = 0;
  while (auto tensor = streamer.next_blocking()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++count;
  }
  EXPECT_EQ(count, llama_tensors(synthetic_preset("tiny")).size());
  EXPECT_LE(streamer.stats().peak_memory, options.memory_limit);
  EXPECT_GT(streamer.stats().peak_memory, 0u);
}

TEST_F(TrawStreaming, EachHeaderIsOneSmallReadWithTheListingsSize) {
  write_traw_tree(dir_.path(), {1, 2});
  // Header and data of a tensor smaller than the largest header: the read is the whole object.
  const std::vector<std::byte> four{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  write_traw(path("TP2/shard1/small.bin"), {4}, Dtype::U8, four);
  boost::asio::io_context io;
  testing::RecordingStore store(io.get_executor());
  StreamerOptions options = partition_options(2, 1);
  options.max_concurrency = 4;
  const auto files =
      testing::run_task(io, detail::discover(store, resolve_url(prefix()), options));
  ASSERT_EQ(files.size(), llama_tensors(synthetic_preset("tiny")).size() + 1);
  EXPECT_TRUE(store.sized().empty()) << "the listing gives every size";
  ASSERT_EQ(store.reads().size(), files.size()) << "one read per header";
  for (const auto& read : store.reads()) {
    EXPECT_EQ(read.offset, 0u) << read.key;
    const auto size = std::filesystem::file_size(read.key);
    EXPECT_EQ(read.length, std::min<std::uint64_t>(size, traw::max_header_size)) << read.key;
  }
  EXPECT_LE(store.peak(), 4);
  EXPECT_GE(store.peak(), 2) << "the headers were not read concurrently";
  for (std::size_t i = 1; i < files.size(); ++i) EXPECT_LT(files[i - 1].key, files[i].key);
  const auto& small = files.back();
  EXPECT_EQ(small.key, path("TP2/shard1/small.bin"));
  EXPECT_EQ(small.size, 36u);
  EXPECT_EQ(small.header.data_start, 32u);
  ASSERT_EQ(small.header.tensors.size(), 1u);
  EXPECT_EQ(small.header.tensors[0].begin, 0u);
  EXPECT_EQ(small.header.tensors[0].end, 4u);
}

TEST_F(TrawStreaming, InspectListsTheTensorsOfAPartition) {
  write_traw_tree(dir_.path(), {2});
  const auto files = inspect(prefix(), partition_options(2, 0));
  const auto specs = llama_tensors(synthetic_preset("tiny"));
  ASSERT_EQ(files.size(), specs.size());
  for (const auto& file : files) {
    ASSERT_EQ(file.header.tensors.size(), 1u);
    const auto& tensor = file.header.tensors[0];
    EXPECT_EQ(file.url, path("TP2/shard0/" + tensor.name + ".bin"));
    EXPECT_EQ(file.header.data_start, 24u + 8u * tensor.shape.size());
    EXPECT_EQ(file.size, file.header.data_start + tensor.byte_size());
    EXPECT_EQ(tensor.begin, 0u);
  }
}

TEST_F(TrawStreaming, AModelPrefixWithoutTpListsTheSizesPresent) {
  write_traw_tree(dir_.path(), {1, 2, 4});
  EXPECT_EQ(stream_error<InvalidArgument>(prefix()),
            prefix() +
                ": holds TRAW partitions (TP sizes present: 1, 2, 4); choose one with --tp N "
                "--rank R (StreamerOptions tensor_parallel_size and rank), or name a shard's "
                "prefix");
}

TEST_F(TrawStreaming, ATpThatWasNotWrittenListsTheSizesPresent) {
  write_traw_tree(dir_.path(), {1, 2, 4});
  EXPECT_EQ(stream_error<NotFoundError>(prefix(), partition_options(8, 0)),
            prefix() + ": no TP8 partition; TP sizes present: 1, 2, 4");
}

TEST_F(TrawStreaming, AMissingShardListsTheShardsPresent) {
  write_traw_tree(dir_.path(), {4});
  std::filesystem::remove_all(dir_.path() / "TP4" / "shard2");
  EXPECT_EQ(stream_error<NotFoundError>(prefix(), partition_options(4, 2)),
            prefix() + ": no shard2 in TP4; shards present: 0, 1, 3");
}

TEST_F(TrawStreaming, ARankOutsideThePartitionIsAnError) {
  write_traw_tree(dir_.path(), {4});
  EXPECT_EQ(stream_error<InvalidArgument>(prefix(), partition_options(4, 4)),
            "rank 4 is outside [0, 4)");
  // inspect() reads headers without a streamer's checks: the listing tells what exists.
  try {
    inspect(prefix(), partition_options(4, 4));
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              prefix() + ": no shard4 in TP4; shards present: 0, 1, 2, 3");
  }
}

TEST_F(TrawStreaming, APrefixHoldingBothLayoutsNamesBoth) {
  write_traw_tree(dir_.path(), {1, 2});
  generate_synthetic_model(dir_.path(), {.preset = "tiny", .shards = 4, .index = true});
  const std::string expected =
      prefix() +
      ": holds both a safetensors checkpoint (model-00001-of-00004.safetensors, "
      "model-00002-of-00004.safetensors, model-00003-of-00004.safetensors and 2 more) and TRAW "
      "partitions (TP sizes present: 1, 2); name the file, the index or a shard's prefix "
      "TP{n}/shard{r}/";
  EXPECT_EQ(stream_error<InvalidArgument>(prefix()), expected);
  EXPECT_EQ(stream_error<InvalidArgument>(prefix(), partition_options(2, 0)), expected);
}

TEST_F(TrawStreaming, APrefixHoldingNeitherLayoutSaysWhatIsMissing) {
  write_text(path("config.json"), "{}");
  std::filesystem::create_directories(dir_.path() / "TP2" / "shard0");
  write_text(path("TP2/shard0/notes.txt"), "not a tensor");
  EXPECT_EQ(stream_error<NotFoundError>(prefix()),
            prefix() +
                ": no files found matching pattern: *.safetensors, nor TRAW objects (*.bin) or "
                "partitions (TP{n}/shard{r}/*.bin)");
}

TEST_F(TrawStreaming, ASafetensorsCheckpointBesidePickledBinFilesStreamsTheSafetensors) {
  write_checkpoint(path("model.safetensors"), {{"w", 8}});
  write_text(path("pytorch_model.bin"), "PK\x03\x04 a pickle");
  RawStreamer streamer(prefix());
  const auto tensor = streamer.next_blocking();
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->info.name, "w");
  EXPECT_FALSE(streamer.next_blocking());
}

TEST_F(TrawStreaming, AShardPrefixWithAnotherPartitionAskedForIsAnError) {
  write_traw_shard(dir_.path() / "TP4" / "shard1", shard_offset(4, 1));
  EXPECT_EQ(stream_error<InvalidArgument>(path("TP4/shard1/"), partition_options(4, 2)),
            path("TP4/shard1/") +
                ": holds the TRAW objects of one shard, not TP4/shard2/; leave "
                "tensor_parallel_size and rank unset, or name the model's prefix");
}

TEST_F(TrawStreaming, ATruncatedObjectIsAFormatErrorNamingIt) {
  write_traw_shard(dir_.path(), 0);
  const std::string object = path("model.norm.weight.bin");
  std::filesystem::resize_file(object, std::filesystem::file_size(object) - 10);
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            object +
                ": truncated TRAW object: 534 bytes, but the 32-byte header declares 512 "
                "bytes of data (10 missing)");
}

TEST_F(TrawStreaming, AWrongMagicIsAFormatErrorNamingTheObject) {
  write_traw_shard(dir_.path(), 0);
  const std::string object = path("model.norm.weight.bin");
  std::fstream file(object, std::ios::in | std::ios::out | std::ios::binary);
  file.write("TRAX", 4);
  file.close();
  EXPECT_EQ(stream_error<FormatError>(object),
            object + ": not a TRAW file (magic is 'TRAX', expected 'TRAW')");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            object + ": not a TRAW file (magic is 'TRAX', expected 'TRAW')");
}

TEST_F(TrawStreaming, AnEmptyObjectIsAFormatErrorNamingIt) {
  write_text(path("empty.bin"), "");
  EXPECT_EQ(stream_error<FormatError>(path("empty.bin")),
            path("empty.bin") +
                ": truncated TRAW header: the object is 0 bytes, too short for the magic at "
                "offset 0 (4 bytes)");
}

TEST(TrawSource, ADimensionBeyondInt64IsAFormatErrorNamingTheObject) {
  const std::uint64_t huge = std::uint64_t{1} << 63;
  const std::vector<std::uint64_t> shape{huge};
  const auto header = traw::encode_header(shape, Dtype::U8);
  EXPECT_THROW(
      {
        try {
          detail::traw_source_file("/m/x.bin", "s3://b/m/x.bin", header.size() + huge, header);
        } catch (const FormatError& error) {
          EXPECT_EQ(std::string(error.what()),
                    "s3://b/m/x.bin: TRAW shape[0] is 9223372036854775808, beyond the int64 "
                    "range of a tensor's shape");
          throw;
        }
      },
      FormatError);
}

TEST(TrawSource, TheTensorIsNamedAfterTheObjectWithoutBin) {
  EXPECT_EQ(detail::traw_tensor_name("/raw/m/TP4/shard1/model.layers.0.mlp.up_proj.weight.bin"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(detail::traw_tensor_name("x.bin"), "x");
}

TEST(TrawStreamingHttp, ASingleObjectStreamsByteExactFromNginx) {
  if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  TempDir dir;
  write_traw_shard(dir.path() / "TP2" / "shard1", shard_offset(2, 1));
  testing::NginxServer nginx({.root = dir.path()});
  const std::string url = nginx.base_url() + "/TP2/shard1/model.embed_tokens.weight.bin";
  testing::expect_traw_object(url, "model.embed_tokens.weight", shard_offset(2, 1));
}

}  // namespace
}  // namespace tensorstream
