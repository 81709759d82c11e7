#include "cli/progress_flag.hpp"

#include <unistd.h>

namespace tensorstream::cli {

void add_progress_flag(CLI::App& command, std::string& mode) {
  mode = "auto";
  command
      .add_option("--progress", mode,
                  "Progress on stderr: auto (a bar on a terminal, a line every 5 s otherwise, "
                  "none with --json), always (the bar), never")
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
  if (mode == "never" || json) return std::nullopt;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::bar : ProgressStyle::plain;
}

}  // namespace tensorstream::cli
