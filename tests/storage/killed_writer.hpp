#pragma once
// A writer killed with SIGKILL in the middle of its upload, as an OOM kill or `kill -9` would end
// it: no destructor, no abort, nothing but what it had stored already.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>

namespace tensorstream::testing {

/// Runs `write` in a forked child process. `write` calls its argument once what it wrote has
/// reached the store; the test process then kills the child with SIGKILL and reaps it. Records
/// a test failure when the child ends in another way (its exception's message goes to stderr).
///
/// Call it while the test process runs a single thread: fork copies only the caller's, so a
/// lock another thread held would stay locked in the child forever. Servers started as
/// processes (s3rver) are fine; in-process ones (FaultProxy) must start after it returns.
inline void kill_writer_midway(const std::function<void(const std::function<void()>&)>& write) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_ends[0]);
    int status = 0;
    try {
      write([&] {
        const char reached = 'r';
        if (::write(pipe_ends[1], &reached, 1) != 1) ::_exit(4);
        // Killed here.
        for (;;) ::pause();
      });
      std::fputs("the writer finished without reporting that its bytes reached the store\n",
                 stderr);
      status = 3;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "the killed writer failed first: %s\n", error.what());
      status = 2;
    }
    // Without gtest's atexit handlers or destructors: the child only stands in for a writer.
    ::_exit(status);
  }
  ::close(pipe_ends[1]);
  char reached = 0;
  const auto got = ::read(pipe_ends[0], &reached, 1);
  ::close(pipe_ends[0]);
  if (got == 1) ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer was not killed midway: wait status " << status;
}

}  // namespace tensorstream::testing
