// The c10d group join_group() makes (libtensorstream_c10d.so: a TCPStore and Gloo), its members
// on threads of one process, each with a rendezvous of its own on a free loopback port.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "support/nginx_server.hpp"
#include "tensorstream/distributed/distributed_options.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

using namespace std::chrono_literals;
using Outcome = BroadcastGroup::Outcome;

class C10dGroup : public ::testing::Test {
 protected:
  void SetUp() override { setenv("TENSORSTREAM_C10D_LIBRARY", TENSORSTREAM_C10D_LIBRARY_PATH, 1); }

  DistributedOptions options(int world_size, int rank,
                             std::chrono::milliseconds timeout = 10s) const {
    DistributedOptions options;
    options.rendezvous = "tcp://127.0.0.1:" + std::to_string(port_);
    options.world_size = world_size;
    options.rank = rank;
    options.timeout = timeout;
    return options;
  }

  // Joins every rank of a world of `keys.size()` at once, rank r under keys[r], each with
  // `member` (or members[r] where given); the groups, or the errors, in rank order.
  std::vector<std::shared_ptr<BroadcastGroup>> join_all(
      const std::vector<std::string>& keys, std::vector<std::string>* errors = nullptr,
      const std::vector<std::string>& members = {}) {
    const int world = static_cast<int>(keys.size());
    std::vector<std::future<std::shared_ptr<BroadcastGroup>>> joins;
    for (int rank = 0; rank < world; ++rank) {
      joins.push_back(std::async(std::launch::async, [&, rank] {
        const auto r = static_cast<std::size_t>(rank);
        const std::string member = members.empty() ? "the model" : members[r];
        return join_group(options(world, rank), keys[r], member);
      }));
    }
    std::vector<std::shared_ptr<BroadcastGroup>> groups;
    for (auto& join : joins) {
      try {
        groups.push_back(join.get());
        if (errors) errors->emplace_back();
      } catch (const Error& error) {
        groups.push_back(nullptr);
        if (!errors) ADD_FAILURE() << error.what();
        if (errors) errors->push_back(error.what());
      }
    }
    return groups;
  }

  // What joining with `joining` fails with: its Error's message, or "joined".
  static std::string join_failure(const DistributedOptions& joining) {
    try {
      join_group(joining, "all", "the model");
    } catch (const Error& error) {
      return error.what();
    }
    return "joined";
  }

  // "rendezvous at tcp://127.0.0.1:PORT: " and `what`.
  std::string at_rendezvous(const std::string& what) const {
    return "rendezvous at tcp://127.0.0.1:" + std::to_string(port_) + ": " + what;
  }

  std::uint16_t port_ = testing::pick_free_port();
};

// Starts a broadcast of `bytes` from `root` on `group` and returns how it ended.
std::future<Outcome> start_broadcast(BroadcastGroup& group, std::vector<std::byte>& bytes,
                                     int root) {
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto outcome = promise->get_future();
  group.broadcast(bytes, root, [promise](Outcome result) { promise->set_value(result); });
  return outcome;
}

// Broadcasts `sent` from `root` (group rank `root_rank`) into `received` on `receiver`, and
// checks that both sides succeed and the bytes arrive.
void expect_broadcast(BroadcastGroup& root, std::vector<std::byte>& sent, int root_rank,
                      BroadcastGroup& receiver, std::vector<std::byte>& received) {
  auto root_done = start_broadcast(root, sent, root_rank);
  auto receiver_done = start_broadcast(receiver, received, root_rank);
  ASSERT_EQ(receiver_done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(receiver_done.get().ok);
  EXPECT_TRUE(root_done.get().ok);
  EXPECT_EQ(received, sent);
}

TEST_F(C10dGroup, TwoMembersBroadcastInPlaceAndGather) {
  auto groups = join_all({"all", "all"});
  ASSERT_TRUE(groups[0] && groups[1]);
  EXPECT_EQ(groups[1]->rank(), 1);
  EXPECT_EQ(groups[1]->size(), 2);

  std::vector<std::byte> sent(3 << 20);
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = std::byte(i * 7 % 251);
  std::vector<std::byte> received(sent.size());
  expect_broadcast(*groups[1], sent, 1, *groups[0], received);

  auto gathered = std::async(std::launch::async, [&] { return groups[0]->all_gather("zero"); });
  EXPECT_EQ(groups[1]->all_gather("rank one"), (std::vector<std::string>{"zero", "rank one"}));
  EXPECT_EQ(gathered.get(), (std::vector<std::string>{"zero", "rank one"}));
}

TEST_F(C10dGroup, AReportedFailureEndsThePendingBroadcastsOfTheOthers) {
  auto groups = join_all({"all", "all", "all"});
  ASSERT_TRUE(groups[0] && groups[1] && groups[2]);
  // Ranks 0 and 2 wait for rank 1's bytes; rank 1 fails instead of sending them.
  std::vector<std::byte> zero(1024), two(1024);
  auto zero_done = start_broadcast(*groups[0], zero, 1);
  auto two_done = start_broadcast(*groups[2], two, 1);
  groups[1]->report_failure("injected failure");
  for (auto* done : {&zero_done, &two_done}) {
    ASSERT_EQ(done->wait_for(5s), std::future_status::ready);
    const Outcome outcome = done->get();
    EXPECT_FALSE(outcome.ok);
    EXPECT_EQ(outcome.failure, "injected failure");
    EXPECT_EQ(outcome.reported_by, 1);
  }
  // Later broadcasts fail at once with the same report.
  auto later = start_broadcast(*groups[0], zero, 2);
  ASSERT_EQ(later.wait_for(1s), std::future_status::ready);
  EXPECT_EQ(later.get().failure, "injected failure");
  // The pending broadcasts end with the process group, after their timeout, on a thread of
  // their own: releasing the groups does not wait for them.
  const auto start = std::chrono::steady_clock::now();
  groups.clear();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(C10dGroup, MembersWithTheSameKeyFormOneGroupNamedByWorldRanks) {
  // Ranks 0 and 2 need tensor-parallel rank 0's files, ranks 1 and 3 rank 1's.
  auto groups = join_all({"tp2/rank0", "tp2/rank1", "tp2/rank0", "tp2/rank1"});
  ASSERT_EQ(groups.size(), 4u);
  for (const auto& group : groups) {
    ASSERT_TRUE(group);
    EXPECT_EQ(group->size(), 2);
  }
  EXPECT_EQ(groups[2]->rank(), 1);
  EXPECT_EQ(groups[3]->member_name(0), "rank 1");
  EXPECT_EQ(groups[3]->member_name(1), "rank 3");

  // World rank 1 is rank 0 of its group, world rank 3 rank 1.
  std::vector<std::byte> one(4096, std::byte{1}), three(4096);
  expect_broadcast(*groups[1], one, 0, *groups[3], three);
}

TEST_F(C10dGroup, MembersThatStreamDifferentlyFailAtTheRendezvousNamingBoth) {
  std::vector<std::string> errors;
  join_all({"all", "all"}, &errors,
           {"'http://a/' with chunk_size 1 B", "'http://b/' with chunk_size 1 B"});
  for (const auto& error : errors) {
    EXPECT_NE(error.find("rendezvous at tcp://127.0.0.1:" + std::to_string(port_) +
                         ": the ranks stream differently"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("'http://a/'"), std::string::npos) << error;
    EXPECT_NE(error.find("'http://b/'"), std::string::npos) << error;
  }
}

TEST_F(C10dGroup, ARendezvousMissingRanksTimesOutNamingThem) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(join_failure(options(3, 0, 1500ms)),
            at_rendezvous("ranks 1, 2 of 3 did not join within 1500 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(C10dGroup, TheMembersPresentAllHearWhichRanksAreMissing) {
  auto rank_one =
      std::async(std::launch::async, [&] { return join_failure(options(3, 1, 1500ms)); });
  const std::string expected = at_rendezvous("rank 2 of 3 did not join within 1500 ms");
  EXPECT_EQ(join_failure(options(3, 0, 1500ms)), expected);
  EXPECT_EQ(rank_one.get(), expected);
}

TEST_F(C10dGroup, ASecondProcessClaimingARankFailsNamingIt) {
  // Ranks 0, 1 and 2 joined (rank 0 keeps serving the store); then another process claims
  // rank 1 in the same world.
  const auto groups = join_all({"all", "all", "all"});
  ASSERT_TRUE(groups[0]);
  EXPECT_EQ(join_failure(options(3, 1, 2s)),
            at_rendezvous("another process joined as rank 1 too"));
}

TEST_F(C10dGroup, BadOptionsAreInvalidArguments) {
  const auto message = [&](DistributedOptions bad) {
    try {
      join_group(bad, "all", "the model");
    } catch (const InvalidArgument& error) {
      return std::string(error.what());
    }
    return std::string("no InvalidArgument");
  };
  EXPECT_EQ(message(options(2, 2)), "rank 2 is outside the world [0, 2)");
  EXPECT_EQ(message(options(0, 0)), "world_size must be at least 1, not 0");
  auto no_port = options(2, 0);
  no_port.rendezvous = "tcp://127.0.0.1";
  EXPECT_EQ(message(no_port),
            "rendezvous 'tcp://127.0.0.1' has no port (expected tcp://HOST:PORT)");
  auto http = options(2, 0);
  http.rendezvous = "http://127.0.0.1:80";
  EXPECT_EQ(message(http),
            "rendezvous 'http://127.0.0.1:80' is not a tcp:// address (expected tcp://HOST:PORT)");
}

}  // namespace
}  // namespace tensorstream
