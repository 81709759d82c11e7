#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tensorstream::testing {
namespace {

std::string command_line(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& argument : argv) {
    if (!text.empty()) text += ' ';
    text += argument;
  }
  return text;
}

// Polling interval while waiting for a child to exit within a deadline.
constexpr auto poll_interval = std::chrono::milliseconds(2);

}  // namespace

std::optional<std::filesystem::path> find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return std::filesystem::path(program);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream directories(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (directory.empty()) continue;
    const auto candidate = std::filesystem::path(directory) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty command");
  const auto program = find_program(argv.front());
  if (!program) throw std::runtime_error(argv.front() + ": program not found");

  std::vector<char*> arguments;
  for (const auto& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // Sockets and files of the test (Asio does not open them close-on-exec) stay out of the child.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  const int error =
      ::posix_spawn(&pid_, program->c_str(), &actions, nullptr, arguments.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    throw std::runtime_error("cannot start " + command_line(argv) + ": " + std::strerror(error));
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_) stop();
}

bool ChildProcess::exited() {
  if (reaped_) return true;
  const pid_t result = ::waitpid(pid_, &status_, WNOHANG);
  if (result == pid_ || (result < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

int ChildProcess::wait() {
  while (!reaped_) {
    const pid_t result = ::waitpid(pid_, &status_, 0);
    if (result == pid_ || (result < 0 && errno != EINTR)) reaped_ = true;
  }
  return status_;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (exited()) return status_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(poll_interval);
  }
  if (!reaped_) ::kill(pid_, SIGKILL);
  return wait();
}

void run_command(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  ChildProcess child(argv, log);
  const int status = child.wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(command_line(argv) + " failed (wait status " + std::to_string(status) +
                             "): " + read_text_file(log));
  }
}

std::uint16_t wait_for_announced_port(ChildProcess& process, const std::filesystem::path& log,
                                      const std::string& marker,
                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string text = read_text_file(log);
    if (const auto at = text.find(marker); at != std::string::npos) {
      const auto digits = at + marker.size();
      const auto end = text.find_first_not_of("0123456789", digits);
      if (end != std::string::npos && end > digits) {
        return static_cast<std::uint16_t>(std::stoul(text.substr(digits, end - digits)));
      }
    }
    if (process.exited()) {
      throw std::runtime_error("server exited before announcing its port: " + text);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("server did not announce its port in time: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace tensorstream::testing
