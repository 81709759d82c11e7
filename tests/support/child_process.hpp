#pragma once
// Programs started by tests: servers that run alongside a test, and one-shot commands.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tensorstream::testing {

/// The full path of `program` found in PATH (or `program` itself when it contains a '/' and is
/// executable); nullopt when there is none.
std::optional<std::filesystem::path> find_program(const std::string& program);

/// A child process whose stdout and stderr go to a log file. It inherits no descriptor but
/// those three, so it cannot hold on to the test's sockets.
class ChildProcess {
 public:
  /// Starts `argv[0]` (looked up in PATH) with `argv`, writing its output to `log`.
  /// Throws std::runtime_error when it cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& log);

  /// stop() unless the process has been reaped already.
  ~ChildProcess();

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// The process id.
  pid_t pid() const { return pid_; }

  /// Whether the process has exited; reaps it if so, without waiting.
  bool exited();

  /// The wait status (see waitpid) once exited() or wait() saw the process end.
  int status() const { return status_; }

  /// Waits for the process to exit by itself and returns its wait status.
  int wait();

  /// Sends SIGTERM, waits up to `grace` for the process to exit, then sends SIGKILL; returns
  /// the wait status.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

/// Runs `argv` to completion with its output in `log`. Throws std::runtime_error quoting the
/// command and its output when it cannot start or exits unsuccessfully.
void run_command(const std::vector<std::string>& argv, const std::filesystem::path& log);

/// Waits until `log`, the output of `process`, holds `marker` followed by a port number (servers
/// started on port 0 announce the port they got, e.g. "listening on 40123") and returns it.
/// Throws std::runtime_error quoting the log when the process exits or `timeout` passes first.
std::uint16_t wait_for_announced_port(ChildProcess& process, const std::filesystem::path& log,
                                      const std::string& marker,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(20));

/// The contents of a text file, or "" when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace tensorstream::testing
