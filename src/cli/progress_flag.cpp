#include "cli/progress_flag.hpp"

#include <unistd.h>

#include "tensorstream/log.hpp"

namespace tensorstream::cli {

void add_progress_flag(CLI::App& command, std::string& mode) {
  mode = "auto";
  command
      .add_option("--progress", mode,
                  "Progress on stderr: auto (a bar on a terminal, a line every 5 s otherwise, "
                  "none with --json or -q), always (the bar), never")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "auto" || value == "always" || value == "never") return {};
            return "'" + value + "' is not auto, always or never";
          },
          "auto|always|never"));
}

std::optional<ProgressStyle> progress_style(const std::string& mode, bool json) {
  if (mode == "always") return ProgressStyle::bar;
  // -q asks for errors only: progress included, unless asked for by name.
  if (mode == "never" || json || !log_enabled(LogLevel::warning)) return std::nullopt;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::bar : ProgressStyle::plain;
}

}  // namespace tensorstream::cli
