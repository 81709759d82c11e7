// Streams and fork(): a child gets none of its parent's threads, so the parent's stream must fail
// there at once rather than wait on them, while streams made in the child work.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

// What the child reports through its exit status: only that leaves it, since a GoogleTest
// assertion there would report in the wrong process.
enum ChildOutcome : int {
  fine = 0,
  parent_stream_yielded = 10,
  parent_stream_threw_something_else = 11,
  new_stream_short = 20,
  new_stream_failed = 21,
  new_stream_left_threads = 22,
  counted_the_parents_threads = 30,
};

// Streams everything of `path` in this process; the number of tensors and whether their bytes
// are the synthetic ones.
bool stream_exactly(const std::string& path, std::size_t expected_tensors) {
  RawStreamer stream(path);
  std::size_t tensors = 0;
  while (auto tensor = stream.next_blocking()) {
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    if (tensor->bytes().size() != expected.size() ||
        (!expected.empty() &&
         std::memcmp(tensor->bytes().data(), expected.data(), expected.size()) != 0)) {
      return false;
    }
    ++tensors;
  }
  return tensors == expected_tensors;
}

// Waits up to a minute for `child`; kills it and reports a hang after that.
int exit_status_of(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

TEST(StreamAfterFork, TheParentsStreamFailsAtOnceInTheChildAndANewOneWorks) {
#ifdef __SANITIZE_THREAD__
  GTEST_SKIP() << "TSan stops a child of a threaded process that starts threads (die_after_fork)";
#endif
  TempDir dir;
  generate_synthetic_model(dir.path() / "tiny", {.preset = "tiny"});
  const std::string model = (dir.path() / "tiny" / "model.safetensors").string();
  const std::size_t tensors = llama_tensors(synthetic_preset("tiny")).size();
  const std::filesystem::path message = dir.path() / "message.txt";

  // Mid-stream at the fork: its I/O threads wait for memory the consumer has not freed.
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  options.memory_limit = 1 << 20;
  auto parent_stream = std::make_unique<RawStreamer>(model, options);
  auto first = parent_stream->next_blocking();
  ASSERT_TRUE(first);
  EXPECT_GE(async::library_threads(), options.io_threads);
  // Fork once the reads have stopped for want of memory, with the parent's threads parked: the
  // child allocates, and where an allocator keeps across fork() a lock that a thread of the
  // parent held (ASan's does; glibc's takes its locks around fork()), the child would wait on it
  // for good.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (std::uint64_t bytes = parent_stream->stats().bytes;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::uint64_t now = parent_stream->stats().bytes;
    if (now == bytes) break;
    bytes = now;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the stream never stopped for memory";
  }

  const pid_t child = ::fork();
  ASSERT_NE(child, -1) << std::strerror(errno);
  if (child == 0) {
    int outcome = fine;
    if (async::library_threads() != 0) ::_exit(counted_the_parents_threads);
    try {
      parent_stream->next_blocking();
      outcome = parent_stream_yielded;
    } catch (const StateError& error) {
      testing::write_file(message, error.what());
    } catch (...) {
      outcome = parent_stream_threw_something_else;
    }
    parent_stream.reset();  // lets it go without waiting for the parent's threads
    if (outcome == fine) {
      try {
        if (!stream_exactly(model, tensors)) outcome = new_stream_short;
        if (async::library_threads() != 0) outcome = new_stream_left_threads;
      } catch (...) {
        outcome = new_stream_failed;
      }
    }
    ::_exit(outcome);
  }
  EXPECT_EQ(exit_status_of(child), fine);
  EXPECT_EQ(testing::read_file(message),
            model + ": this stream was made in process " + std::to_string(::getpid()) +
                ", which forked this one (" + std::to_string(child) +
                "); its threads stayed there: make a new stream in this process");

  // The parent's stream goes on where it was.
  std::size_t rest = 0;
  while (parent_stream->next_blocking()) ++rest;
  EXPECT_EQ(rest + 1, tensors);
  parent_stream.reset();
  EXPECT_EQ(async::library_threads(), 0U);
}

}  // namespace
}  // namespace tensorstream
