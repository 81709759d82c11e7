#pragma once
// Ctrl-C, SIGTERM and a closed terminal for the tool's commands: what they wrote half is removed before they end.

#include <thread>

namespace tensorstream::cli {

/// Handles SIGINT, SIGTERM and SIGHUP (a closed terminal) while it lives. The first one cancels the library's work in
/// progress (detail::interrupt_blocking_runs): writers abort, so temporaries are removed and
/// multipart uploads aborted, and the command then fails, which run() reports as "interrupted"
/// with exit status 128 + the signal's number. With no such work in progress (a command that
/// writes nothing, or between two steps of one), the process ends as the signal's default action
/// ends it, once the temporaries of files being written are removed; at a second signal, at once.
///
/// One at a time, made on the main thread before any other thread starts, so that each thread
/// finds the handlers in place. A process forked from this one (and not exec'd) gets the default
/// actions back.
class Interruption {
 public:
  Interruption();
  ~Interruption();
  Interruption(const Interruption&) = delete;
  Interruption& operator=(const Interruption&) = delete;

  /// The signal that interrupted the command's work; 0 for none.
  int signal() const;

 private:
  std::thread watcher_;
};

}  // namespace tensorstream::cli
