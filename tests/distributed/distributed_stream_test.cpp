// Distributed streams of members in one process, over a LocalGroup: what each member yields,
// what the server serves, how failures spread. The c10d group itself is tested in
// c10d_group_test.cpp, and whole processes in tests/cli/distributed_cli_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <thread>
#include <vector>

#include "streaming/forwarding_store.hpp"
#include "support/local_group.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::LocalGroup;
using testing::NginxServer;
using testing::TempDir;

// What one member's stream gave.
struct MemberResult {
  std::map<std::string, std::vector<std::byte>> tensors;
  StreamStats stats;
  std::string error;
};

// Streams `url` on every member of `group` at once, each on a thread of its own, with the
// options `options_of` gives each rank and the store `store_of` gives (the default one where
// it gives none).
std::vector<MemberResult> stream_together(
    LocalGroup& group, int size, const std::string& url,
    const std::function<StreamerOptions(int)>& options_of,
    const std::function<StoreFactory(int)>& store_of = {}) {
  std::vector<MemberResult> results(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      MemberResult& result = results[static_cast<std::size_t>(rank)];
      try {
        StreamerOptions options = options_of(rank);
        options.distributed.group = group.member(rank);
        StoreFactory factory = store_of ? store_of(rank) : StoreFactory{};
        std::unique_ptr<RawStreamer> streamer =
            factory ? std::make_unique<RawStreamer>(url, options, factory)
                    : std::make_unique<RawStreamer>(url, options);
        while (auto tensor = streamer->next_blocking()) {
          const auto bytes = tensor->bytes();
          result.tensors[tensor->info.name].assign(bytes.begin(), bytes.end());
        }
        result.stats = streamer->stats();
      } catch (const std::exception& error) {
        result.error = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

StreamerOptions small_reads(int) {
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  options.max_concurrency = 4;
  options.memory_limit = 2 << 20;
  return options;
}

class DistributedStream : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(models_.path() / "tiny", {.preset = "tiny"});
    for (const auto& spec : llama_tensors(synthetic_preset("tiny"))) {
      expected_bytes_ += tensor_byte_size(spec);
      names_.push_back(spec.name);
    }
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{
        .root = models_.path(),
        .extra_config = "access_log " + (logs_.path() / "access.log").string() + ";"});
    url_ = nginx_->base_url() + "/tiny/model.safetensors";
  }

  // Every member yielded every tensor of the model, byte for byte.
  void expect_whole_model_everywhere(const std::vector<MemberResult>& results) {
    for (std::size_t rank = 0; rank < results.size(); ++rank) {
      const MemberResult& result = results[rank];
      ASSERT_EQ(result.error, "") << "rank " << rank;
      ASSERT_EQ(result.tensors.size(), names_.size()) << "rank " << rank;
      for (const auto& name : names_) {
        const auto& bytes = result.tensors.at(name);
        const auto expected = synthetic_bytes(name, 0, bytes.size());
        ASSERT_EQ(bytes.size(), expected.size());
        EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0)
            << name << " differs on rank " << rank;
      }
    }
  }

  std::filesystem::path access_log() const { return logs_.path() / "access.log"; }

  TempDir models_;
  TempDir logs_;
  std::unique_ptr<NginxServer> nginx_;
  std::string url_;
  std::uint64_t expected_bytes_ = 0;
  std::vector<std::string> names_;
};

TEST_F(DistributedStream, EveryMemberOfTwoYieldsEveryTensorByteExact) {
  LocalGroup group(2);
  expect_whole_model_everywhere(stream_together(group, 2, url_, small_reads));
}

TEST_F(DistributedStream, FourMembersReadTheTensorsOnceBetweenThem) {
  // One stream alone first: what it costs the server beyond the tensors is the header.
  {
    RawStreamer alone(url_, small_reads(0));
    while (alone.next_blocking()) {
    }
  }
  const std::uint64_t alone = testing::served_bytes(access_log());
  ASSERT_GT(alone, expected_bytes_);
  const std::uint64_t header_bytes = alone - expected_bytes_;

  LocalGroup group(4);
  const auto results = stream_together(group, 4, url_, small_reads);
  expect_whole_model_everywhere(results);
  // Each member reads the header; each tensor's bytes are served once in all.
  EXPECT_EQ(testing::served_bytes(access_log()) - alone, expected_bytes_ + 4 * header_bytes);
  std::uint64_t broadcast = 0;
  for (const auto& result : results) {
    EXPECT_EQ(result.stats.group_size, 4);
    EXPECT_EQ(result.stats.bytes, expected_bytes_);
    EXPECT_EQ(result.stats.total_bytes, expected_bytes_);
    broadcast += result.stats.broadcast_bytes;
    // A member reads about a quarter: the shares are balanced by bytes.
    EXPECT_LT(result.stats.bytes - result.stats.broadcast_bytes, expected_bytes_ / 2);
  }
  EXPECT_EQ(broadcast, 3 * expected_bytes_);
}

TEST_F(DistributedStream, TheMemoryLimitHoldsOnEveryMember) {
  LocalGroup group(3);
  const auto results = stream_together(group, 3, url_, [](int rank) {
    StreamerOptions options = small_reads(rank);
    options.memory_limit = 1 << 20;
    return options;
  });
  expect_whole_model_everywhere(results);
  std::uint64_t largest = 0;
  for (const auto& spec : llama_tensors(synthetic_preset("tiny"))) {
    largest = std::max(largest, tensor_byte_size(spec));
  }
  for (const auto& result : results) {
    EXPECT_LE(result.stats.peak_memory, std::max<std::uint64_t>(1 << 20, largest));
  }
}

TEST_F(DistributedStream, AGroupOfOneStreamsAlone) {
  LocalGroup group(1);
  const auto results = stream_together(group, 1, url_, small_reads);
  expect_whole_model_everywhere(results);
  EXPECT_EQ(results[0].stats.group_size, 1);
  EXPECT_EQ(results[0].stats.broadcast_bytes, 0u);
  EXPECT_EQ(group.broadcasts(), 0u);
}

TEST(DistributedOptions, AreCheckedWhenTheStreamIsMade) {
  // The InvalidArgument a stream of a world of 2 with these settings fails with at once.
  const auto message = [](const std::string& rendezvous, int rank,
                          std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    StreamerOptions options;
    options.distributed.world_size = 2;
    options.distributed.rendezvous = rendezvous;
    options.distributed.rank = rank;
    options.distributed.timeout = timeout;
    try {
      RawStreamer streamer("/nonexistent/model.safetensors", options);
    } catch (const InvalidArgument& error) {
      return std::string(error.what());
    }
    return std::string("no InvalidArgument");
  };
  EXPECT_EQ(message("", 0),
            "a world of 2 processes needs a rendezvous address (tcp://HOST:PORT) or a group");
  EXPECT_EQ(message("tcp://127.0.0.1:1", -1), "rank -1 is outside the world [0, 2)");
  EXPECT_EQ(message("tcp://127.0.0.1:99999", 0),
            "rendezvous 'tcp://127.0.0.1:99999' has no port in [1, 65535] (expected "
            "tcp://HOST:PORT)");
  EXPECT_EQ(message("tcp://127.0.0.1:1", 0, std::chrono::milliseconds(0)),
            "the group timeout must be positive, not 0 ms");
}

TEST_F(DistributedStream, MembersWithDifferentChunkSizesFailAlikeNamingBoth) {
  LocalGroup group(2);
  const auto results = stream_together(group, 2, url_, [](int rank) {
    StreamerOptions options = small_reads(rank);
    if (rank == 1) options.chunk_size = 32 * 1024;
    return options;
  });
  for (const auto& result : results) {
    EXPECT_NE(result.error.find("the members disagree: rank 0 streams '" + url_ +
                                "' with chunk_size 64.0 KiB"),
              std::string::npos)
        << result.error;
    EXPECT_NE(result.error.find("rank 1 streams '" + url_ + "' with chunk_size 32.0 KiB"),
              std::string::npos)
        << result.error;
  }
  EXPECT_EQ(group.broadcasts(), 0u);
}

// Members that plan the same reads of different versions of an object would broadcast bytes of
// both: here the file is replaced (same layout, another inode) after member 0 read its header
// and before member 1 reads its own.
TEST_F(DistributedStream, MembersThatReadDifferentVersionsOfAnObjectFailAlikeNamingIt) {
  const std::filesystem::path file = models_.path() / "tiny" / "model.safetensors";
  generate_synthetic_model(models_.path() / "copy", {.preset = "tiny"});
  std::promise<void> header_read;
  std::shared_future<void> member_zero_read_its_header = header_read.get_future().share();

  // Member 0's store tells when it has pinned the file; member 1's waits for that and then
  // replaces the file before its first look at it.
  class TellingStore : public testing::ForwardingStore {
   public:
    TellingStore(boost::asio::any_io_executor executor, std::promise<void>& told)
        : ForwardingStore(std::move(executor)), told_(told) {}
    boost::asio::awaitable<ObjectStat> stat(std::string key) override {
      ObjectStat stat = co_await inner_.stat(std::move(key));
      told_.set_value();
      co_return stat;
    }

   private:
    std::promise<void>& told_;
  };
  class ReplacingStore : public testing::ForwardingStore {
   public:
    ReplacingStore(boost::asio::any_io_executor executor, std::shared_future<void> after,
                   std::filesystem::path replacement)
        : ForwardingStore(std::move(executor)),
          after_(std::move(after)),
          replacement_(std::move(replacement)) {}
    boost::asio::awaitable<std::uint64_t> size(std::string key) override {
      after_.wait();
      std::filesystem::rename(replacement_, key);
      co_return co_await inner_.size(std::move(key));
    }

   private:
    std::shared_future<void> after_;
    std::filesystem::path replacement_;
  };

  LocalGroup group(2);
  const auto results =
      stream_together(group, 2, file.string(), small_reads, [&](int rank) -> StoreFactory {
        if (rank == 0) {
          return [&](const Url&, boost::asio::any_io_executor executor) {
            return std::make_unique<TellingStore>(std::move(executor), header_read);
          };
        }
        return [&](const Url&, boost::asio::any_io_executor executor) {
          return std::make_unique<ReplacingStore>(std::move(executor),
                                                  member_zero_read_its_header,
                                                  models_.path() / "copy" / "model.safetensors");
        };
      });
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& error = results[static_cast<std::size_t>(rank)].error;
    EXPECT_EQ(error.rfind("streaming " + file.string() + " on rank " + std::to_string(rank) +
                              ": the members read different versions of " + file.string() +
                              ": rank 0 read inode ",
                          0),
              0u)
        << error;
    EXPECT_NE(error.find(", rank 1 read inode "), std::string::npos) << error;
    EXPECT_NE(error.find("; it changed while they read the headers, restart the stream"),
              std::string::npos)
        << error;
  }
  EXPECT_EQ(group.broadcasts(), 0u);
}

// A file store whose reads of tensor data fail, as a member whose network broke would.
class FailingDataStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    if (offset >= 4096) throw StorageError(inner_.url(key), "injected read failure");
    co_await inner_.read_range(std::move(key), offset, destination);
  }
};

// A file store that has none of the objects, as a member pointed at the wrong bucket would.
class EmptyStore : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  boost::asio::awaitable<std::uint64_t> size(std::string key) override {
    throw NotFoundError(inner_.url(key), "injected: no such object");
    co_return 0;
  }
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t,
                                          std::span<std::byte>) override {
    throw NotFoundError(inner_.url(key), "injected: no such object");
    co_return;
  }
};

TEST_F(DistributedStream, AMemberThatCannotReadTheHeaderFailsEveryMember) {
  const std::string file = (models_.path() / "tiny" / "model.safetensors").string();
  LocalGroup group(2);
  const auto results = stream_together(group, 2, file, small_reads, [](int rank) -> StoreFactory {
    if (rank == 0) return {};
    return [](const Url&, boost::asio::any_io_executor executor) {
      return std::make_unique<EmptyStore>(std::move(executor));
    };
  });
  EXPECT_NE(results[1].error.find("injected: no such object"), std::string::npos)
      << results[1].error;
  EXPECT_EQ(results[0].error.rfind("streaming " + file + " on rank 0: rank 1 could not read the "
                                   "checkpoint: ", 0),
            0u)
      << results[0].error;
  EXPECT_NE(results[0].error.find("injected: no such object"), std::string::npos)
      << results[0].error;
  EXPECT_EQ(group.broadcasts(), 0u);
}

TEST_F(DistributedStream, AMemberWhoseReadFailsFailsEveryMemberWithItsCause) {
  const std::string file = (models_.path() / "tiny" / "model.safetensors").string();
  LocalGroup group(3);
  const auto results = stream_together(
      group, 3, file, small_reads, [](int rank) -> StoreFactory {
        if (rank != 1) return {};
        return [](const Url&, boost::asio::any_io_executor executor) {
          return std::make_unique<FailingDataStore>(std::move(executor));
        };
      });
  EXPECT_NE(results[1].error.find("injected read failure"), std::string::npos)
      << results[1].error;
  for (const int rank : {0, 2}) {
    const auto& error = results[static_cast<std::size_t>(rank)].error;
    EXPECT_EQ(error.rfind("streaming " + file + " on rank " + std::to_string(rank) +
                              ": rank 1 failed: ",
                          0),
              0u)
        << error;
    EXPECT_NE(error.find("injected read failure"), std::string::npos) << error;
  }
}

// c10d ends the broadcasts pending on a member with the failure another member reported, while
// Gloo may still land their bytes later. A member whose tensors land in the caller's memory
// keeps that memory alive until then, though its streamer is gone and the caller let go of it.
TEST_F(DistributedStream, PlacedMemoryOutlivesTheBroadcastsStillLandingInIt) {
  const std::string file = (models_.path() / "tiny" / "model.safetensors").string();
  LocalGroup group(2, LocalGroup::Failures::complete_early);
  // Member 1 fails its first data read, once member 0 has started a broadcast it has not.
  class FailingOnceMemberZeroWaits : public testing::ForwardingStore {
   public:
    FailingOnceMemberZeroWaits(boost::asio::any_io_executor executor, LocalGroup& group)
        : ForwardingStore(std::move(executor)), group_(group) {}
    boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                            std::span<std::byte> destination) override {
      if (offset < 4096) co_return co_await inner_.read_range(std::move(key), offset, destination);
      group_.wait_pending(0);
      throw StorageError(inner_.url(key), "injected read failure");
    }

   private:
    LocalGroup& group_;
  };
  struct Region {
    std::vector<std::byte> bytes = std::vector<std::byte>(8 << 20);
    std::size_t used = 0;
  };
  auto region = std::make_shared<Region>();
  const std::weak_ptr<Region> watched = region;
  const auto results = stream_together(
      group, 2, file,
      [&](int rank) {
        StreamerOptions options = small_reads(rank);
        if (rank == 0) {
          options.placement = [region](const TensorInfo& tensor,
                                       const std::string&) -> std::shared_ptr<std::byte> {
            std::byte* const at = region->bytes.data() + region->used;
            region->used += (tensor.byte_size() + 63) / 64 * 64;
            return {region, at};
          };
        }
        return options;
      },
      [&group](int rank) -> StoreFactory {
        if (rank != 1) return {};
        return [&group](const Url&, boost::asio::any_io_executor executor) {
          return std::make_unique<FailingOnceMemberZeroWaits>(std::move(executor), group);
        };
      });
  EXPECT_NE(results[0].error.find("rank 1 failed: "), std::string::npos) << results[0].error;
  region.reset();
  // Both streamers are gone: what holds the region now is member 0's broadcasts still landing.
  ASSERT_FALSE(watched.expired());
  group.land_late();
  EXPECT_TRUE(watched.expired());
}

}  // namespace
}  // namespace tensorstream
