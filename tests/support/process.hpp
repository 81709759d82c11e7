#pragma once
// Running a program to completion and capturing what it printed, for the CLI tests.

#include <string>
#include <vector>

namespace tensorstream::testing {

/// How a program ended and what it printed.
struct ProcessResult {
  int exit_code = -1;   ///< Exit status, or 128 + signal number if it was killed.
  std::string out;      ///< Everything written to stdout.
  std::string err;      ///< Everything written to stderr.
};

/// Runs `argv` (argv[0] is the program's path) with stdin from /dev/null and waits for it.
ProcessResult run_process(const std::vector<std::string>& argv);

/// Runs the tensorstream CLI built with these tests with `arguments`.
ProcessResult run_cli(std::vector<std::string> arguments);

/// The lines of `text`, without their '\n'.
std::vector<std::string> lines_of(const std::string& text);

/// The tensor lines of a `stream` command's output, sorted (tensors complete in any order),
/// without its last line: the summary, which names the URL and the timings.
std::vector<std::string> sorted_tensor_lines(const std::string& out);

/// A number of the summary line of a `--json` output ("key":VALUE); -1 when it has none, so that
/// a missing number never passes for 0.
long long summary_value(const std::string& output, const std::string& key);

}  // namespace tensorstream::testing
