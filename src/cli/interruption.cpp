#include "cli/interruption.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <system_error>

#include "base/blocking_run.hpp"
#include "storage/output_file.hpp"

namespace tensorstream::cli {
namespace {

constexpr int interrupting_signals[] = {SIGINT, SIGTERM, SIGHUP};

// The handler may do only what is async-signal-safe: it records the signal and wakes the watcher
// through a pipe, and the watcher does the rest.
std::atomic<int> signal_received{0};
int signal_wake_read = -1;
int signal_wake_write = -1;

void restore_signal_defaults() {
  for (const int number : interrupting_signals) std::signal(number, SIG_DFL);
}

void on_interrupting_signal(int number) {
  int none = 0;
  if (!signal_received.compare_exchange_strong(none, number)) {
    // A second signal: the user does not want to wait for the cleanup. The signal is blocked
    // while its handler runs, so raise() takes effect as the handler returns.
    std::signal(number, SIG_DFL);
    std::raise(number);
    return;
  }
  const char byte = static_cast<char>(number);
  [[maybe_unused]] const auto written = ::write(signal_wake_write, &byte, 1);
}

// Ends the process as `number`'s default action would, after removing the temporaries of files
// being written outside the library's cancellable work (bench's reports), and erasing a progress
// bar that may be mid-line on a terminal, so that the shell's prompt starts a line of its own.
[[noreturn]] void end_as_by_default(int number) {
  detail::remove_output_temporaries();
  constexpr char erase[] = "\r\033[K";
  if (::isatty(STDERR_FILENO) == 1) {
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, erase, sizeof erase - 1);
  }
  constexpr char message[] = "tensorstream: interrupted\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
  std::signal(number, SIG_DFL);
  ::kill(::getpid(), number);
  // The signal ends the process as it arrives, on whichever thread takes it.
  for (;;) ::pause();
}

void watch_for_signals() {
  char byte = 0;
  while (::read(signal_wake_read, &byte, 1) < 0 && errno == EINTR) {
  }
  const int number = static_cast<unsigned char>(byte);
  if (number == 0) return;  // the Interruption is going away
  if (!detail::interrupt_blocking_runs()) end_as_by_default(number);
}

}  // namespace

Interruption::Interruption() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "cannot make a pipe for signals");
  }
  signal_wake_read = fds[0];
  signal_wake_write = fds[1];
  signal_received = 0;
  // Once per process: a child forked from here gets the default actions back, since no watcher
  // runs there to act on its signals.
  [[maybe_unused]] static const int registered =
      ::pthread_atfork(nullptr, nullptr, restore_signal_defaults);
  struct sigaction action {};
  action.sa_handler = on_interrupting_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (const int number : interrupting_signals) sigaction(number, &action, nullptr);
  watcher_ = std::thread(watch_for_signals);
}

Interruption::~Interruption() {
  restore_signal_defaults();
  // Wakes a watcher that no signal woke; one that did has finished or is ending the process.
  if (signal_received == 0) {
    constexpr char stop = 0;
    [[maybe_unused]] const auto written = ::write(signal_wake_write, &stop, 1);
  }
  watcher_.join();
  ::close(signal_wake_read);
  ::close(signal_wake_write);
}

int Interruption::signal() const { return signal_received; }

}  // namespace tensorstream::cli
