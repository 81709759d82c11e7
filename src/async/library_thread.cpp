#include "tensorstream/async/library_thread.hpp"

#include <pthread.h>

#include <mutex>

namespace tensorstream::async {
namespace {

std::atomic<std::size_t> running_threads{0};

// fork() copies only the thread that calls it: a child runs none of the library's threads,
// whatever the parent's count says.
void count_from_zero_in_a_child() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    ::pthread_atfork(nullptr, nullptr, [] { running_threads.store(0); });
  });
}

}  // namespace

LibraryThread& LibraryThread::operator=(LibraryThread&& other) noexcept {
  if (this != &other) {
    join();
    thread_ = std::move(other.thread_);
  }
  return *this;
}

void LibraryThread::join() {
  if (thread_.joinable()) thread_.join();
}

LibraryThread::Running::Running(const std::string& name) {
  // Linux's limit is 15 characters; a longer name would be refused whole.
  ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

void LibraryThread::starting() {
  count_from_zero_in_a_child();
  running_threads.fetch_add(1);
}

void LibraryThread::ended() { running_threads.fetch_sub(1); }

std::size_t library_threads() { return running_threads.load(); }

}  // namespace tensorstream::async
