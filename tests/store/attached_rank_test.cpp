#include "tensorstream/store/attached_rank.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "store/attach_fixture.hpp"
#include "support/process_mappings.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store::testing {
namespace {

std::string text(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

using tensorstream::testing::permissions_at;

using AttachedRankTest = AttachServerTest;

// The bytes of `name` in rank 0, attached by async_attach (use_future needs a default-constructible
// result, which AttachedRank is not).
asio::awaitable<std::string> async_bytes_of(std::filesystem::path socket, std::string name) {
  const AttachedRank rank = co_await async_attach(std::move(socket), 0);
  co_return text(rank.bytes(*rank.find(name)));
}

TEST_F(AttachedRankTest, MapsTheBytesTheServerPasses) {
  start_attach_server();
  const AttachedRank rank = attach(socket_path_, 0);
  EXPECT_EQ(rank.manifest(), manifest());
  EXPECT_EQ(rank.where(), socket_path_.string());
  EXPECT_EQ(rank.find("model.absent"), nullptr);
  const std::string weights = weights_content();
  const std::string kv = kv_content();
  for (const auto& entry : manifest().tensors) {
    SCOPED_TRACE(entry.name);
    const TensorEntry* found = rank.find(entry.name);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, entry);
    const std::string& region = entry.region == "weights" ? weights : kv;
    EXPECT_EQ(text(rank.bytes(*found)), region.substr(entry.offset, entry.bytes));
  }
}

TEST_F(AttachedRankTest, WeightsAreReadOnlyAndTheKvCacheIsShared) {
  start_attach_server();
  const AttachedRank rank = attach(socket_path_, 0);
  const TensorEntry& weight = *rank.find("model.embed_tokens.weight");
  const TensorEntry& value = *rank.find("model.layers.0.self_attn.kv_cache.value");
  EXPECT_EQ(permissions_at(rank.bytes(weight).data()), "r--s");
  EXPECT_FALSE(rank.is_writable(weight));
  const auto refused = thrown<InvalidArgument>([&] { rank.writable_bytes(weight); });
  EXPECT_EQ(refused.what(), socket_path_.string() +
                                ": tensor \"model.embed_tokens.weight\" lies in read-only region "
                                "\"weights\"");

  const auto writable = rank.writable_bytes(value);
  EXPECT_EQ(permissions_at(writable.data()), "rw-s");
  std::memset(writable.data(), 0x5a, writable.size());
  std::string expected = kv_content();
  expected.replace(value.offset, value.bytes, std::string(value.bytes, '\x5a'));
  EXPECT_EQ(mapped_content(kv_.get()), expected);
}

TEST_F(AttachedRankTest, EntriesOfAnotherManifestAreChecked) {
  start_attach_server();
  const AttachedRank rank = attach(socket_path_, 0);
  const TensorEntry outside{"big", Dtype::U8, {512}, "weights", 768, 512};
  EXPECT_EQ(thrown<InvalidArgument>([&] { rank.bytes(outside); }).what(),
            socket_path_.string() + ": tensor \"big\" lies outside region \"weights\"");
  const TensorEntry elsewhere{"gpu", Dtype::U8, {1}, "gpu", 0, 1};
  EXPECT_EQ(thrown<InvalidArgument>([&] { rank.writable_bytes(elsewhere); }).what(),
            socket_path_.string() +
                ": tensor \"gpu\" names region \"gpu\", which the manifest does not have");
}

TEST_F(AttachedRankTest, PrivateWeightsAreCopyOnWrite) {
  start_attach_server();
  AttachOptions options;
  options.private_weights = true;
  const AttachedRank rank = attach(socket_path_, 0, options);
  const TensorEntry& weight = *rank.find("model.norm.weight");
  const auto bytes = rank.writable_bytes(weight);
  EXPECT_EQ(permissions_at(bytes.data()), "rw-p");
  std::memset(bytes.data(), 0, bytes.size());
  std::string expected = weights_content();
  expected.replace(weight.offset, weight.bytes, std::string(weight.bytes, '\0'));
  EXPECT_EQ(text(rank.bytes(weight)), expected.substr(weight.offset, weight.bytes));
  EXPECT_EQ(mapped_content(weights_.get()), weights_content());
}

TEST_F(AttachedRankTest, ViewsOutliveTheObjectWhileKeptAlive) {
  start_attach_server();
  std::shared_ptr<const void> holder;
  std::span<const std::byte> view;
  {
    const AttachedRank rank = attach(socket_path_, 0);
    view = rank.bytes(*rank.find("model.embed_tokens.weight"));
    holder = rank.keep_alive();
  }
  EXPECT_EQ(text(view), weights_content().substr(0, 64));
  const void* address = view.data();
  holder.reset();
  EXPECT_EQ(permissions_at(address), "unmapped");
}

TEST_F(AttachedRankTest, AsyncAttachMapsTheRegions) {
  start_attach_server();
  EXPECT_EQ(tensorstream::testing::run_task(
                async_bytes_of(socket_path_, "model.layers.0.self_attn.kv_cache.key")),
            kv_content().substr(0, 256));
}

TEST_F(AttachedRankTest, RegionLargerThanItsDescriptorIsAFormatErrorWithoutLeaks) {
  const std::size_t before = open_descriptors();
  start_attach_server();
  const auto error = thrown<FormatError>([&] { attach(socket_path_, 2); });
  EXPECT_EQ(error.what(), socket_path_.string() +
                              ": region \"weights\" has 1024 bytes, the manifest says 2048");
  stop();
  EXPECT_EQ(open_descriptors(), before);
}

TEST_F(AttachedRankTest, InvalidManifestIsAFormatErrorWithoutLeaks) {
  const std::size_t before = open_descriptors();
  start_attach_server();
  const auto error = thrown<FormatError>([&] { attach(socket_path_, 3); });
  EXPECT_EQ(error.what(), socket_path_.string() +
                              ": invalid manifest: version 2 is not supported (this build reads 1)");
  stop();
  EXPECT_EQ(open_descriptors(), before);
}

TEST_F(AttachedRankTest, AnImpostorsUnsealedMemoryIsRefusedWithoutLeaks) {
  const std::size_t before = open_descriptors();
  start_attach_server();
  const auto weights = thrown<StorageError>([&] { attach(socket_path_, 4); });
  EXPECT_EQ(weights.what(),
            socket_path_.string() +
                ": refusing region \"weights\": its memory is not sealed read-only as a store "
                "server's is, so whoever answered on this socket could change it under this "
                "process");
  EXPECT_EQ(weights.kind(), ErrorKind::access_denied);
  const auto kv_cache = thrown<StorageError>([&] { attach(socket_path_, 5); });
  EXPECT_EQ(kv_cache.what(),
            socket_path_.string() +
                ": refusing region \"kv_cache\": its memory is not sealed against resizing as a "
                "store server's is, so whoever answered on this socket could change it under "
                "this process");
  stop();
  EXPECT_EQ(open_descriptors(), before);
}

TEST_F(AttachedRankTest, DescriptorCountMustMatchTheRegions) {
  ReceivedReply reply;
  reply.json = to_json(manifest());
  reply.fds.push_back(sealed_memfd_with(weights_content()));
  const auto error = thrown<FormatError>([&] { AttachedRank(std::move(reply), "here"); });
  EXPECT_EQ(error.what(), std::string("here: the reply passed 1 descriptors for 2 regions"));
}

TEST_F(AttachedRankTest, ErrorReplyIsTheClientsException) {
  start_attach_server();
  const auto error = thrown<InvalidArgument>([&] { attach(socket_path_, 9); });
  EXPECT_EQ(error.what(), socket_path_.string() + ": rank 9 is not served");
}

}  // namespace
}  // namespace tensorstream::store::testing
