#pragma once
/// @file
/// Where every thread of the library comes from.

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>

#include "tensorstream/export.hpp"

namespace tensorstream::async {

/// A thread the library starts: named (as `top -H`, `ps -L` and debuggers show it), counted
/// for the process, and joined when destroyed. Every thread of the libraries and the tool is
/// one, so that a process can see what the library runs, a test can check that a stream left
/// none behind, and a forked child, which inherits none of them, starts its count at zero (a
/// fork handler resets it): objects that own threads check their process instead of waiting for
/// threads that stayed in the parent (see RawStreamer). The c10d plugin, which links none of
/// the libraries, is the exception: its threads and Gloo's live with a group.
class TENSORSTREAM_API LibraryThread {
 public:
  /// No thread.
  LibraryThread() = default;

  /// Runs `body()` on a new thread named `name` (at most 15 characters: "ts-" and the role).
  template <class Body>
  LibraryThread(std::string name, Body body) {
    starting();
    try {
      thread_ = std::thread([name = std::move(name), body = std::move(body)]() mutable {
        const Running running(name);
        body();
      });
    } catch (...) {
      ended();
      throw;
    }
  }

  LibraryThread(LibraryThread&&) noexcept = default;
  /// Joins the thread this one held, if any, before taking `other`'s.
  LibraryThread& operator=(LibraryThread&& other) noexcept;
  ~LibraryThread() { join(); }

  /// Waits for the thread to end; nothing when there is none.
  void join();

  /// Lets the thread run on alone (it still counts until it ends): for a thread that winds
  /// something down past the lifetime of its owner.
  void detach() { thread_.detach(); }

  bool joinable() const { return thread_.joinable(); }

  std::thread::id get_id() const { return thread_.get_id(); }

 private:
  // Names the thread and counts it as running, until the body returns or throws.
  class Running {
   public:
    explicit Running(const std::string& name);
    ~Running() { ended(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
  };

  static void starting();
  static void ended();

  std::thread thread_;
};

/// How many of the library's threads this process runs now: started and not yet ended.
TENSORSTREAM_API std::size_t library_threads();

}  // namespace tensorstream::async
