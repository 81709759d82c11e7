// Which files and tensors a stream reads: the index, the *.safetensors fallback, rank files.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <set>

#include "streaming/checkpoint_files.hpp"
#include "streaming/discovery.hpp"
#include "streaming/forwarding_store.hpp"
#include "streaming/recording_store.hpp"
#include "support/model_loader_environment.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::LoggedMessages;
using testing::names_of;
using testing::stream_by_name;
using testing::stream_error;
using testing::TempDir;
using testing::write_checkpoint;
using testing::write_raw_checkpoint;
using testing::write_text;

using Names = std::vector<std::string>;

class Discovery : public ::testing::Test {
 protected:
  std::string prefix() const { return dir_.path().string() + "/"; }
  std::string path(const std::string& name) const { return prefix() + name; }
  void write_index(const std::string& json) const {
    write_text(path("model.safetensors.index.json"), json);
  }

  // Settings of the environment must not change what these tests stream.
  testing::ModelLoaderEnvironment environment_;
  TempDir dir_;
};

TEST_F(Discovery, IndexedShardsStreamEveryTensorOnce) {
  generate_synthetic_model(dir_.path(), {.preset = "tiny", .shards = 3, .index = true});
  RawStreamer streamer(prefix());
  const auto tensors = stream_by_name(streamer);
  std::set<std::string> expected;
  for (const auto& spec : llama_tensors(synthetic_preset("tiny"))) expected.insert(spec.name);
  const auto names = names_of(tensors);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected);
  EXPECT_EQ(streamer.stats().files, 3u);
}

TEST_F(Discovery, IndexListingSomeTensorsOfAFileStreamsOnlyThose) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}, {"y", 8}, {"z", 2}});
  write_checkpoint(path("b.safetensors"), {{"w", 4}, {"v", 4}});
  write_checkpoint(path("unlisted.safetensors"), {{"u", 4}});
  write_index(
      R"({"metadata":{"total_size":8},"weight_map":{"x":"a.safetensors","w":"b.safetensors"}})");
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"w", "x"}));
  EXPECT_EQ(streamer.stats().total_bytes, 8u);
}

TEST_F(Discovery, ATensorTheIndexListsButItsFileLacksIsAnError) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{"x":"a.safetensors","q":"a.safetensors","p":"a.safetensors"}})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            "Missing 2 tensors at " + path("a.safetensors") + ": p, q (listed in " +
                path("model.safetensors.index.json") + ")");
}

TEST_F(Discovery, AMissingTensorsMessageNamesTheFirstTen) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  std::string json = R"({"weight_map":{"x":"a.safetensors")";
  for (int i = 10; i < 22; ++i) json += ",\"t" + std::to_string(i) + "\":\"a.safetensors\"";
  write_index(json + "}}");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            "Missing 12 tensors at " + path("a.safetensors") +
                ": t10, t11, t12, t13, t14, t15, t16, t17, t18, t19 and 2 more (listed in " +
                path("model.safetensors.index.json") + ")");
}

TEST_F(Discovery, AFileTheIndexNamesButIsAbsentIsNotFound) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{"x":"a.safetensors","y":"gone.safetensors"}})");
  EXPECT_EQ(stream_error<NotFoundError>(prefix()),
            path("gone.safetensors") + ": No such file or directory");
}

TEST_F(Discovery, AnUndecodableIndexFallsBackToEveryFileWithAWarning) {
  write_checkpoint(path("b.safetensors"), {{"y", 4}});
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{"x":"a.safetensors")");
  LoggedMessages warnings(LogLevel::warning);
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"x", "y"}));
  const auto logged = warnings.messages();
  ASSERT_EQ(logged.size(), 1u);
  const std::string start = path("model.safetensors.index.json") + ": not valid JSON (";
  const std::string end = "); streaming every *.safetensors file under " + prefix() + " instead";
  EXPECT_EQ(logged[0].substr(0, start.size()), start) << logged[0];
  EXPECT_TRUE(logged[0].ends_with(end)) << logged[0];
}

TEST_F(Discovery, AnIndexWithoutWeightMapFallsBackToEveryFileWithAWarning) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"metadata":{"total_size":4}})");
  LoggedMessages warnings(LogLevel::warning);
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"x"}));
  EXPECT_EQ(warnings.messages(),
            (Names{path("model.safetensors.index.json") +
                   ": no \"weight_map\"; streaming every *.safetensors file under " + prefix() +
                   " instead"}));
}

TEST_F(Discovery, AnIndexThatIsNotAnObjectFallsBack) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"(["weight_map"])");
  LoggedMessages warnings(LogLevel::warning);
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"x"}));
  EXPECT_EQ(warnings.messages().size(), 1u);
}

TEST_F(Discovery, AWeightMapThatIsNotAnObjectIsAnError) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":["a.safetensors"]})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            path("model.safetensors.index.json") +
                ": \"weight_map\" is an array, not an object of tensor names to file names");
}

TEST_F(Discovery, AWeightMapEntryThatIsNotAStringIsAnError) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{"x":3}})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            path("model.safetensors.index.json") +
                ": \"weight_map\" gives tensor \"x\" a number, not a file name");
}

TEST_F(Discovery, AnEmptyWeightMapIsAnError) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{}})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            path("model.safetensors.index.json") + ": \"weight_map\" is empty");
}

TEST_F(Discovery, AnIndexNamingAFileOutsideItsDirectoryIsAnError) {
  write_index(R"({"weight_map":{"x":"../elsewhere.safetensors"}})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            path("model.safetensors.index.json") +
                ": \"weight_map\" gives tensor \"x\" the file \"../elsewhere.safetensors\", which "
                "is not a relative path inside the index's directory");
}

TEST_F(Discovery, AnIndexGivingATensorTwoFilesIsAnError) {
  write_index(R"({"weight_map":{"x":"a.safetensors","x":"b.safetensors"}})");
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            path("model.safetensors.index.json") +
                ": \"weight_map\" gives tensor \"x\" two files, \"a.safetensors\" and "
                "\"b.safetensors\"");
}

// A store on which the index exists but cannot be read.
class UnreadableIndexStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    if (key.ends_with("model.safetensors.index.json")) {
      throw StorageError(url(key), "Permission denied");
    }
    co_await ForwardingStore::read_range(std::move(key), offset, destination);
  }
};

TEST_F(Discovery, AnIndexThatCannotBeReadIsNotSwallowed) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  write_index(R"({"weight_map":{"x":"a.safetensors"}})");
  boost::asio::io_context io;
  UnreadableIndexStore store(io.get_executor());
  try {
    testing::run_task(io, detail::discover(store, resolve_url(prefix()), {}));
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()), path("model.safetensors.index.json") + ": Permission denied");
  }
}

TEST_F(Discovery, ADirectoryNamedLikeTheIndexIsNoIndex) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  std::filesystem::create_directory(path("model.safetensors.index.json"));
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"x"}));
}

TEST_F(Discovery, AUrlNamingTheIndexStreamsWhatItLists) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}, {"y", 4}});
  write_index(R"({"weight_map":{"y":"a.safetensors"}})");
  RawStreamer streamer(path("model.safetensors.index.json"));
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"y"}));
}

TEST_F(Discovery, AnUndecodableIndexNamedByTheUrlIsAnError) {
  write_index("{");
  const auto message = stream_error<FormatError>(path("model.safetensors.index.json"));
  EXPECT_EQ(message.rfind(path("model.safetensors.index.json") + ": not valid JSON (", 0), 0u)
      << message;
}

TEST_F(Discovery, DuplicateNamesComeFromTheFirstFileOnceWithAWarning) {
  write_checkpoint(path("c.safetensors"), {{"shared", 16}, {"only_c", 4}}, std::byte{3});
  write_checkpoint(path("b.safetensors"), {{"shared", 16}}, std::byte{2});
  write_checkpoint(path("a.safetensors"), {{"shared", 16}, {"only_a", 4}}, std::byte{1});
  LoggedMessages warnings(LogLevel::warning);
  RawStreamer streamer(prefix());
  const auto tensors = stream_by_name(streamer);
  EXPECT_EQ(names_of(tensors), (Names{"only_a", "only_c", "shared"}));
  const auto bytes = tensors.at("shared").bytes();
  EXPECT_TRUE(
      std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{1}; }));
  EXPECT_EQ(tensors.at("shared").object, path("a.safetensors"));
  EXPECT_EQ(warnings.messages(),
            (Names{"tensor shared in " + path("b.safetensors") +
                       " is skipped: an earlier file already has it",
                   "tensor shared in " + path("c.safetensors") +
                       " is skipped: an earlier file already has it"}));
  EXPECT_EQ(streamer.stats().total_tensors, 3u);
}

TEST_F(Discovery, FilesInSubdirectoriesAreNotStreamed) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}});
  std::filesystem::create_directory(path("nested"));
  write_checkpoint(path("nested/b.safetensors"), {{"y", 4}});
  RawStreamer streamer(prefix());
  EXPECT_EQ(names_of(stream_by_name(streamer)), (Names{"x"}));
}

TEST_F(Discovery, ListedFilesAreNotAskedForTheSizesTheListingGave) {
  generate_synthetic_model(dir_.path(), {.preset = "tiny", .shards = 3});
  boost::asio::io_context io;
  testing::RecordingStore store(io.get_executor());
  const auto files = testing::run_task(
      io, detail::discover(store, resolve_url(prefix()), StreamerOptions{}));
  ASSERT_EQ(files.size(), 3u);
  for (const auto& file : files) EXPECT_EQ(file.size, std::filesystem::file_size(file.key));
  // Nor is the index, whose absence the listing shows too.
  EXPECT_EQ(store.sized(), Names{});
}

// The index's own size comes from the listing.
TEST_F(Discovery, FilesNamedByTheIndexAreAskedForTheirSizes) {
  generate_synthetic_model(dir_.path(), {.preset = "tiny", .shards = 2, .index = true});
  boost::asio::io_context io;
  testing::RecordingStore store(io.get_executor());
  testing::run_task(io,
                    detail::discover(store, resolve_url(prefix()), StreamerOptions{}));
  auto sized = store.sized();
  std::sort(sized.begin(), sized.end());
  EXPECT_EQ(sized, (Names{path("model-00001-of-00002.safetensors"),
                          path("model-00002-of-00002.safetensors")}));
}

TEST_F(Discovery, HeaderReadsStayWithinMaxConcurrency) {
  constexpr int shards = 50;
  for (int i = 0; i < shards; ++i) {
    write_checkpoint(path("part-" + std::to_string(100 + i) + ".safetensors"),
                     {{"t" + std::to_string(i), 8}});
  }
  StreamerOptions options;
  options.max_concurrency = 4;
  for (const std::string& url : {prefix(), path("model.safetensors.index.json")}) {
    if (url != prefix()) {
      // The same through an index, whose files are asked for their sizes first.
      std::string json = R"({"weight_map": {)";
      for (int i = 0; i < shards; ++i) {
        json += (i ? "," : "") + ("\"t" + std::to_string(i) + "\": \"part-" +
                                  std::to_string(100 + i) + ".safetensors\"");
      }
      write_index(json + "}}");
    }
    boost::asio::io_context io;
    testing::RecordingStore store(io.get_executor());
    const auto files =
        testing::run_task(io, detail::discover(store, resolve_url(url), options));
    EXPECT_EQ(files.size(), static_cast<std::size_t>(shards)) << url;
    EXPECT_LE(store.peak(), 4) << url;
    EXPECT_GE(store.peak(), 2) << url << ": the store saw no concurrency at all";
  }
}

TEST_F(Discovery, APrefixWithoutSafetensorsFilesNamesThePattern) {
  write_text(path("config.json"), "{}");
  EXPECT_EQ(stream_error<NotFoundError>(prefix()),
            prefix() +
                ": no files found matching pattern: *.safetensors, nor TRAW objects (*.bin) or "
                "partitions (TP{n}/shard{r}/*.bin)");
}

TEST_F(Discovery, RankFilesAreStreamedAndTheIndexIgnored) {
  write_checkpoint(path("model-rank-1-part-0.safetensors"), {{"w", 8}}, std::byte{11});
  write_checkpoint(path("model-rank-1-part-1.safetensors"), {{"v", 4}}, std::byte{12});
  write_checkpoint(path("model-rank-0-part-0.safetensors"), {{"w", 8}}, std::byte{10});
  write_checkpoint(path("model.safetensors"), {{"w", 8}, {"u", 8}}, std::byte{13});
  write_index(R"({"weight_map":{"w":"model.safetensors","u":"model.safetensors"}})");
  StreamerOptions options;
  options.tensor_parallel_size = 2;
  options.rank = 1;
  RawStreamer streamer(prefix(), options);
  const auto tensors = stream_by_name(streamer);
  EXPECT_EQ(names_of(tensors), (Names{"v", "w"}));
  EXPECT_EQ(tensors.at("w").bytes()[0], std::byte{11});
  EXPECT_EQ(streamer.stats().files, 2u);
}

TEST_F(Discovery, MissingRankFilesNameThePattern) {
  write_checkpoint(path("model-rank-0-part-0.safetensors"), {{"w", 8}});
  StreamerOptions options;
  options.tensor_parallel_size = 4;
  options.rank = 3;
  EXPECT_EQ(stream_error<NotFoundError>(prefix(), options),
            prefix() +
                ": no files found matching pattern: model-rank-3-part-*.safetensors, nor TRAW "
                "objects (*.bin) or partitions (TP{n}/shard{r}/*.bin)");
}

TEST_F(Discovery, ARankOutsideTheWorldIsRejectedAtConstruction) {
  StreamerOptions options;
  options.tensor_parallel_size = 2;
  options.rank = 2;
  EXPECT_EQ(stream_error<InvalidArgument>(prefix(), options), "rank 2 is outside [0, 2)");
  options.rank = -1;
  EXPECT_EQ(stream_error<InvalidArgument>(prefix(), options), "rank -1 is outside [0, 2)");
}

TEST_F(Discovery, RankFilesNeedAPrefix) {
  write_checkpoint(path("model-rank-0-part-0.safetensors"), {{"w", 8}});
  StreamerOptions options;
  options.tensor_parallel_size = 2;
  EXPECT_EQ(stream_error<InvalidArgument>(path("model-rank-0-part-0.safetensors"), options),
            path("model-rank-0-part-0.safetensors") +
                ": tensor_parallel_size > 1 needs a prefix holding rank files, not a single file");
}

TEST_F(Discovery, AFormatOtherThanPtIsRejected) {
  write_raw_checkpoint(
      path("np.safetensors"),
      R"({"__metadata__":{"format":"np"},"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
      4);
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            "unsupported format \"np\" in " + path("np.safetensors") +
                ": only \"pt\" is supported");
}

TEST_F(Discovery, AnUnknownDtypeIsRejected) {
  write_raw_checkpoint(path("f4.safetensors"),
                       R"({"x":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2);
  EXPECT_EQ(stream_error<FormatError>(prefix()),
            "invalid safetensors header in " + path("f4.safetensors") +
                ": tensor \"x\": unknown dtype \"F4\"");
}

TEST_F(Discovery, InspectShowsWhatTheStreamWouldRead) {
  write_checkpoint(path("a.safetensors"), {{"x", 4}, {"y", 8}});
  write_checkpoint(path("b.safetensors"), {{"w", 4}});
  write_index(R"({"weight_map":{"x":"a.safetensors","w":"b.safetensors"}})");
  const auto files = inspect(prefix());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].url, path("a.safetensors"));
  ASSERT_EQ(files[0].header.tensors.size(), 1u);
  EXPECT_EQ(files[0].header.tensors[0].name, "x");
  EXPECT_EQ(files[1].url, path("b.safetensors"));
}

TEST(ResolveUrl, BucketPathsWithoutAWeightsSuffixArePrefixes) {
  EXPECT_EQ(resolve_url("s3://bucket/models/llama").path, "/models/llama/");
  EXPECT_EQ(resolve_url("gs://bucket/models/llama/").path, "/models/llama/");
  EXPECT_EQ(resolve_url("s3://bucket/llama/model.safetensors").path,
            "/llama/model.safetensors");
  EXPECT_EQ(resolve_url("gs://bucket/llama/model.safetensors.index.json").path,
            "/llama/model.safetensors.index.json");
  EXPECT_EQ(resolve_url("https://host/models/blob").path, "/models/blob");
}

}  // namespace
}  // namespace tensorstream
