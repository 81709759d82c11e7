#include "tensorstream/async/library_thread.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <future>
#include <string>

namespace tensorstream::async {
namespace {

TEST(LibraryThread, IsCountedWhileItRunsAndCarriesItsName) {
  const std::size_t before = library_threads();
  std::promise<void> release;
  std::string name;
  {
    LibraryThread thread("ts-test-worker", [&name, released = release.get_future()] {
      char buffer[16] = {};
      ::pthread_getname_np(::pthread_self(), buffer, sizeof buffer);
      name = buffer;
      released.wait();
    });
    EXPECT_EQ(library_threads(), before + 1);
    release.set_value();
    thread.join();
  }
  EXPECT_EQ(library_threads(), before);
  EXPECT_EQ(name, "ts-test-worker");
}

TEST(LibraryThread, ANameLongerThanLinuxAllowsIsCut) {
  std::string name;
  LibraryThread("ts-a-name-longer-than-fifteen", [&name] {
    char buffer[16] = {};
    ::pthread_getname_np(::pthread_self(), buffer, sizeof buffer);
    name = buffer;
  }).join();
  EXPECT_EQ(name, "ts-a-name-longe");
}

TEST(LibraryThread, AThreadThatThrowsIsNoLongerCounted) {
  const std::size_t before = library_threads();
  // An exception leaving a thread's body ends the process, so the body catches its own; what
  // counts is that the count falls whichever way the body returns.
  LibraryThread("ts-test-throw", [] {
    try {
      throw std::runtime_error("inside");
    } catch (const std::runtime_error&) {
    }
  }).join();
  EXPECT_EQ(library_threads(), before);
}

TEST(LibraryThread, ADetachedThreadCountsUntilItEnds) {
  const std::size_t before = library_threads();
  std::promise<void> release;
  std::promise<void> ending;
  LibraryThread thread("ts-test-detach", [released = release.get_future(), &ending] {
    released.wait();
    ending.set_value();
  });
  thread.detach();
  EXPECT_EQ(library_threads(), before + 1);
  auto ended = ending.get_future();
  release.set_value();
  ended.wait();
  // set_value() came just before the body returned: wait for the count to follow.
  while (library_threads() != before) std::this_thread::yield();
  EXPECT_EQ(library_threads(), before);
}

}  // namespace
}  // namespace tensorstream::async
