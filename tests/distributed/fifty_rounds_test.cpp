// Fifty rounds each of the ways a distributed stream into the caller's memory ends early: a
// member stopped at a random moment (its streamer destroyed and the member lost, as a process
// killed by SIGTERM is) and a member whose reads of tensor data are refused. Every round must
// end, each member with every tensor byte-exact or with one error, and no byte may land in the
// caller's memory after the last reference to it went: the sanitizer builds run these too,
// ASan catching a late write into freed memory and TSan a race on the way there.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "streaming/forwarding_store.hpp"
#include "streaming/refusing_store.hpp"
#include "support/local_group.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::LocalGroup;
using testing::RefusingStore;
using testing::TempDir;

constexpr int rounds = 50;

// The caller's memory of one member: one block its tensors are placed in, one after another.
struct Region {
  std::vector<std::byte> bytes = std::vector<std::byte>(8 << 20);
  std::size_t used = 0;
};

// What one member's stream gave.
struct MemberEnd {
  std::size_t exact_tensors = 0;
  bool ended = false;  ///< It yielded its last tensor.
  std::string error;
};

class FiftyRounds : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(dir_.path() / "tiny", {.preset = "tiny"});
    file_ = (dir_.path() / "tiny" / "model.safetensors").string();
    tensors_ = llama_tensors(synthetic_preset("tiny")).size();
  }

  // Member `rank`'s stream of one round into `region`, stopped after `stop_after` tensors (or
  // never, when it is larger than the model), with the store `refusing` or not.
  MemberEnd stream(LocalGroup& group, int rank, const std::shared_ptr<Region>& region,
                 std::size_t stop_after, bool refusing) {
    StreamerOptions options;
    options.chunk_size = 64 * 1024;
    options.max_concurrency = 4;
    options.memory_limit = 2 << 20;
    options.distributed.group = group.member(rank);
    options.placement = [region](const TensorInfo& tensor,
                                 const std::string&) -> std::shared_ptr<std::byte> {
      std::byte* const at = region->bytes.data() + region->used;
      region->used += (tensor.byte_size() + 63) / 64 * 64;
      return {region, at};
    };
    StoreFactory factory;
    if (refusing) {
      factory = [](const Url&, boost::asio::any_io_executor executor) {
        return std::make_unique<RefusingStore>(std::move(executor));
      };
    }
    MemberEnd end;
    try {
      auto streamer = factory ? std::make_unique<RawStreamer>(file_, options, factory)
                              : std::make_unique<RawStreamer>(file_, options);
      while (end.exact_tensors < stop_after) {
        auto tensor = streamer->next_blocking();
        if (!tensor) {
          end.ended = true;
          break;
        }
        const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
        if (tensor->bytes().size() == expected.size() &&
            (expected.empty() ||
             std::memcmp(tensor->bytes().data(), expected.data(), expected.size()) == 0)) {
          ++end.exact_tensors;
        }
      }
      if (!end.ended) {
        // Stopped: gone from the group, as a killed process is, then destroyed.
        group.lose(rank);
      }
    } catch (const std::exception& error) {
      end.error = error.what();
    }
    return end;
  }

  // Runs both members of a round at once; their ends once both ended, after which no late
  // broadcast may still hold their memory.
  std::vector<MemberEnd> round(std::size_t stop_after[2], bool refusing_member_one) {
    LocalGroup group(2, LocalGroup::Failures::complete_early);
    std::vector<std::shared_ptr<Region>> regions{std::make_shared<Region>(),
                                                 std::make_shared<Region>()};
    const std::vector<std::weak_ptr<Region>> watched{regions[0], regions[1]};
    std::vector<MemberEnd> ends(2);
    std::vector<std::thread> members;
    for (int rank = 0; rank < 2; ++rank) {
      members.emplace_back([&, rank] {
        const auto r = static_cast<std::size_t>(rank);
        ends[r] = stream(group, rank, regions[r], stop_after[r],
                             rank == 1 && refusing_member_one);
      });
    }
    for (auto& member : members) member.join();
    regions.clear();
    // The broadcasts a failure ended early land now, in memory that must still be theirs.
    group.land_late();
    for (const auto& region : watched) EXPECT_TRUE(region.expired());
    return ends;
  }

  TempDir dir_;
  std::string file_;
  std::size_t tensors_ = 0;
};

TEST_F(FiftyRounds, AMemberStoppedAtARandomMomentEndsEveryRoundCleanly) {
  std::mt19937 random(27);
  for (int i = 0; i < rounds; ++i) {
    const int stopped = static_cast<int>(random() % 2);
    std::size_t stop_after[2] = {tensors_ + 1, tensors_ + 1};
    stop_after[stopped] = random() % tensors_;
    const auto ends = round(stop_after, false);
    const MemberEnd& other = ends[static_cast<std::size_t>(1 - stopped)];
    // The other member either finished before the loss or fails with it.
    if (other.error.empty()) {
      EXPECT_TRUE(other.ended) << "round " << i;
      EXPECT_EQ(other.exact_tensors, tensors_) << "round " << i;
    } else {
      EXPECT_NE(other.error.find("connection to rank " + std::to_string(stopped) + " lost"),
                std::string::npos)
          << "round " << i << ": " << other.error;
    }
    EXPECT_EQ(ends[static_cast<std::size_t>(stopped)].error, "") << "round " << i;
  }
}

TEST_F(FiftyRounds, AMemberWhoseReadsAreRefusedFailsBothInEveryRound) {
  for (int i = 0; i < rounds; ++i) {
    std::size_t stop_after[2] = {tensors_ + 1, tensors_ + 1};
    const auto ends = round(stop_after, true);
    EXPECT_NE(ends[1].error.find("HTTP 404 Not Found (injected)"), std::string::npos)
        << "round " << i << ": " << ends[1].error;
    EXPECT_EQ(ends[0].error.rfind("streaming " + file_ + " on rank 0: rank 1 failed: ", 0),
              0u)
        << "round " << i << ": " << ends[0].error;
  }
}

}  // namespace
}  // namespace tensorstream
