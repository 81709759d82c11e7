// What a worker can do with the descriptors an attach hands it: nothing that harms another
// worker. The weights cannot be written, resized, punched or sealed by anyone; the KV cache,
// which workers write, cannot be resized or sealed (a truncation would kill every other worker
// that mapped it with SIGBUS, and a seal would refuse every later attach).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "store/served_model.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/store/attached_rank.hpp"
#include "tensorstream/store/client.hpp"
#include "tensorstream/store/manifest.hpp"
#include "tensorstream/transfer/partition_checkpoint.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::TempDir;

constexpr std::chrono::milliseconds attach_patience{30'000};

// The errno of a call that returned -1, 0 when it succeeded.
int error_of(int result) { return result == 0 ? 0 : errno; }

int mapping_error(int fd, std::size_t bytes, int protection) {
  void* memory = ::mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return errno;
  ::munmap(memory, bytes);
  return 0;
}

class ReceivedDescriptors : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(dir_.path() / "model", {.preset = "tiny"});
    StoreServerOptions options;
    options.tensor_parallel_size = 1;
    options.socket.path = dir_.path() / "store.sock";
    options.kv_cache.num_blocks = 4;
    served_.emplace((dir_.path() / "model").string(), options);
    served_->load();
    reply_ = request(options.socket.path, attach_request(0, attach_patience), attach_patience);
    const Manifest manifest = parse_manifest(reply_.json, "the test");
    ASSERT_EQ(manifest.regions.size(), 2U);
    weights_ = reply_.fds.at(manifest.regions[0].fd_index).get();
    weight_bytes_ = manifest.regions[0].bytes;
    kv_cache_ = reply_.fds.at(manifest.regions[1].fd_index).get();
    kv_bytes_ = manifest.regions[1].bytes;
    ASSERT_GT(weight_bytes_, 0U);
    ASSERT_GT(kv_bytes_, 0U);
  }

  TempDir dir_;
  std::optional<ServedModel> served_;
  ReceivedReply reply_;
  int weights_ = -1;
  std::size_t weight_bytes_ = 0;
  int kv_cache_ = -1;
  std::size_t kv_bytes_ = 0;
};

TEST_F(ReceivedDescriptors, TheWeightsRefuseEveryWayOfChangingThem) {
  EXPECT_EQ(mapping_error(weights_, weight_bytes_, PROT_READ | PROT_WRITE), EPERM);
  EXPECT_EQ(mapping_error(weights_, weight_bytes_, PROT_READ), 0);
  EXPECT_EQ(error_of(::ftruncate(weights_, 0)), EPERM);
  EXPECT_EQ(error_of(::ftruncate(weights_, static_cast<off_t>(weight_bytes_) * 2)), EPERM);
  EXPECT_EQ(error_of(::fallocate(weights_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)),
            EPERM);
  const char byte = 1;
  EXPECT_EQ(::pwrite(weights_, &byte, 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(error_of(::fcntl(weights_, F_ADD_SEALS, F_SEAL_FUTURE_WRITE)), EPERM);
}

TEST_F(ReceivedDescriptors, TheKvCacheIsWritableButItsSizeAndSealsAreFixed) {
  EXPECT_EQ(mapping_error(kv_cache_, kv_bytes_, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(error_of(::ftruncate(kv_cache_, 0)), EPERM);
  EXPECT_EQ(error_of(::ftruncate(kv_cache_, static_cast<off_t>(kv_bytes_) * 2)), EPERM);
  EXPECT_EQ(error_of(::fcntl(kv_cache_, F_ADD_SEALS, F_SEAL_FUTURE_WRITE)), EPERM);
  EXPECT_EQ(error_of(::fcntl(kv_cache_, F_ADD_SEALS, F_SEAL_WRITE)), EPERM);
  EXPECT_EQ(::fcntl(kv_cache_, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
}

TEST_F(ReceivedDescriptors, AWorkerThatTriedToTruncateTheKvCacheLeavesTheNextAttachWhole) {
  ASSERT_NE(::ftruncate(kv_cache_, 0), 0);
  struct stat status {};
  ASSERT_EQ(::fstat(kv_cache_, &status), 0);
  EXPECT_EQ(static_cast<std::size_t>(status.st_size), kv_bytes_);
  // Before the size was sealed, every later attach of the rank failed here ("region kv_cache
  // has 0 bytes, the manifest says ...").
  EXPECT_NO_THROW(attach(dir_.path() / "store.sock", 0));
}

}  // namespace
}  // namespace tensorstream::store::testing
