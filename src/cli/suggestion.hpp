#pragma once
// "did you mean ...?" for a mistyped subcommand or flag.

#include <CLI/App.hpp>
#include <string>
#include <vector>

namespace tensorstream::cli {

/// For the command line `arguments` (without the program name) that `app` refused: the nearest
/// subcommand to an unknown word where a subcommand belongs (`stream`, or `ls` after `cache`), or
/// the nearest long flag of the chosen command to an unknown `--flag`, as "did you mean
/// 'stream'?" (or "did you mean --chunk-size?"); empty when nothing is close (at most 2 edits
/// away, and less than the word's length) and the flag begins no single longer one up to a dash
/// (`--endpoint` for `--endpoint-url`); for a directory given to a command that takes it as
/// `--cache` (`cache ls DIR`), "did you mean --cache DIR?".
std::string suggestion(const CLI::App& app, const std::vector<std::string>& arguments);

}  // namespace tensorstream::cli
