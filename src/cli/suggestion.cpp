#include "cli/suggestion.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <string_view>

namespace tensorstream::cli {
namespace {

// Levenshtein distance.
std::size_t edits(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `word`, if close enough to be what was meant.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_edits = 3;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edits(word, candidate);
    if (distance < best_edits && distance < word.size()) {
      best = candidate;
      best_edits = distance;
    }
  }
  return best;
}

// The one candidate that `word` begins up to a dash, as "endpoint" begins "endpoint-url": a
// name cut short is too far from the whole for nearest().
std::string completion(std::string_view word, const std::vector<std::string>& candidates) {
  std::string found;
  for (const auto& candidate : candidates) {
    if (!candidate.starts_with(std::string(word) + "-")) continue;
    if (!found.empty()) return {};
    found = candidate;
  }
  return found;
}

}  // namespace

std::string suggestion(const CLI::App& app, const std::vector<std::string>& arguments) {
  if (arguments.empty()) return {};
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  if (!commands.empty()) {
    std::vector<std::string> names;
    for (const CLI::App* command : commands) {
      names.push_back(command->get_name());
      if (command->get_name() == arguments.front()) {
        return suggestion(*command, {arguments.begin() + 1, arguments.end()});
      }
    }
    if (arguments.front().starts_with("-")) return {};
    const auto command = nearest(arguments.front(), names);
    return command.empty() ? "" : "did you mean '" + command + "'?";
  }
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) flags.push_back(name);
  }
  for (const auto& argument : arguments) {
    if (!argument.starts_with("--")) continue;
    const std::string name = argument.substr(2, argument.find('=') - 2);
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
    std::string flag = nearest(name, flags);
    if (flag.empty()) flag = completion(name, flags);
    return flag.empty() ? "" : "did you mean --" + flag + "?";
  }
  // `cache ls DIR`: a command that takes no words but --cache was given its cache directory.
  const auto words = app.get_options([](const CLI::Option* option) {
    return option->get_positional();
  });
  if (words.empty() && std::find(flags.begin(), flags.end(), "cache") != flags.end()) {
    for (const auto& argument : arguments) {
      std::error_code error;
      if (!argument.starts_with("-") && std::filesystem::is_directory(argument, error)) {
        return "did you mean --cache " + argument + "?";
      }
    }
  }
  return {};
}

}  // namespace tensorstream::cli
