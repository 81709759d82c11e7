// `tensorstream cache ls|du|verify|prune|rm`: what a cache directory holds, and its upkeep.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "cli/commands.hpp"
#include "cli/existing_directory.hpp"
#include "cli/json_writer.hpp"
#include "cli/time_text.hpp"
#include "storage/cache/cache_floor.hpp"
#include "storage/cache/cache_layout.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/cache_directory.hpp"
#include "tensorstream/streaming/resolve_url.hpp"

namespace tensorstream::cli {
namespace {

struct CacheArguments {
  std::string directory;
  std::string url;
  std::string older_than = "0";
  std::optional<std::string> min_free;
  bool json = false;
};

// --cache-min-free, else TENSORSTREAM_CACHE_MIN_FREE, else the default, as streams take it.
CacheFloor cache_floor(const CacheArguments& arguments) {
  if (arguments.min_free) return parse_cache_floor(*arguments.min_free, "--cache-min-free");
  return tensorstream::detail::environment_cache_floor().value_or(CacheFloor::standard());
}

// --cache, else TENSORSTREAM_CACHE_DIR: a directory that a stream made a cache, or one without
// files of its own (empty, or a new volume with only lost+found). Anything else is a mistyped
// name, which would otherwise list as an empty cache.
std::string cache_directory(const CacheArguments& arguments) {
  std::string directory = arguments.directory;
  if (directory.empty()) {
    const auto setting = tensorstream::detail::environment_setting("CACHE_DIR");
    if (!setting) throw InvalidArgument("name the cache: --cache DIR, or TENSORSTREAM_CACHE_DIR");
    directory = setting->value;
  }
  require_directory(directory);
  if (tensorstream::detail::holds_other_files(directory)) {
    throw NotFoundError(directory, "not a cache directory (no objects/ in it)");
  }
  return directory;
}

// What streams call the object that `text` names: a local path or file:// URL is the file's
// absolute path, as a stream of it resolves it.
std::string cache_url(const std::string& text) {
  const Url url = resolve_url(text);
  return url.scheme == "file" ? url.path : text;
}

std::string entry_json(const CacheEntryStatus& entry) {
  std::string line = "{";
  append_key(line, "url");
  append_json_string(line, entry.url);
  append_key(line, "version");
  append_json_string(line, entry.version.describe());
  line += ",\"size\":" + std::to_string(entry.size) +
          ",\"cached_bytes\":" + std::to_string(entry.cached_bytes) +
          ",\"disk_bytes\":" + std::to_string(entry.disk_bytes);
  append_key(line, "last_used");
  append_json_string(line, utc_text(entry.last_used));
  line += std::string(",\"in_use\":") + (entry.in_use ? "true" : "false");
  return line;
}

std::string entry_text(const CacheEntryStatus& entry) {
  return entry.url + "  " + format_byte_size(entry.cached_bytes) + " of " +
         format_byte_size(entry.size) + "  " + entry.version.describe() + "  last used " +
         utc_text(entry.last_used) + (entry.in_use ? "  (in use)" : "");
}

void print_entries(const std::vector<CacheEntryStatus>& entries, bool json, const char* verb) {
  for (const auto& entry : entries) {
    if (json) {
      std::puts((entry_json(entry) + "}").c_str());
    } else {
      std::printf("%s%s\n", verb, entry_text(entry).c_str());
    }
  }
}

void run_ls(const CacheArguments& arguments) {
  print_entries(list_cache(cache_directory(arguments)), arguments.json, "");
}

void run_du(const CacheArguments& arguments) {
  const std::string directory = cache_directory(arguments);
  std::uint64_t disk = 0, cached = 0, size = 0;
  const auto entries = list_cache(directory);
  for (const auto& entry : entries) {
    disk += entry.disk_bytes;
    cached += entry.cached_bytes;
    size += entry.size;
  }
  const CacheSpace space = cache_space(directory, cache_floor(arguments));
  const auto number = [](std::uint64_t value) { return std::to_string(value); };
  if (arguments.json) {
    std::puts(("{\"entries\":" + std::to_string(entries.size()) + ",\"disk_bytes\":" +
               number(disk) + ",\"cached_bytes\":" + number(cached) + ",\"size\":" +
               number(size) + ",\"pending_bytes\":" + number(space.pending_bytes) +
               ",\"free_bytes\":" + number(space.free_bytes) + ",\"filesystem_bytes\":" +
               number(space.filesystem_bytes) + ",\"min_free_bytes\":" +
               number(space.min_free_bytes) + "}")
                  .c_str());
    return;
  }
  std::printf("%s in %zu %s under %s (%s of %s cached)\n", format_byte_size(disk).c_str(),
              entries.size(), entries.size() == 1 ? "entry" : "entries", directory.c_str(),
              format_byte_size(cached).c_str(), format_byte_size(size).c_str());
  if (space.pending_bytes != 0) {
    std::printf("%s in entries being made or removed\n",
                format_byte_size(space.pending_bytes).c_str());
  }
  std::printf("%s free of %s; the cache keeps %s free\n", format_byte_size(space.free_bytes).c_str(),
              format_byte_size(space.filesystem_bytes).c_str(),
              format_byte_size(space.min_free_bytes).c_str());
}

void run_verify(const CacheArguments& arguments) {
  std::uint64_t checked = 0;
  std::size_t damaged = 0;
  const auto checks = verify_cache(cache_directory(arguments));
  for (const auto& check : checks) {
    checked += check.checked_bytes;
    damaged += check.damaged_ranges;
    if (arguments.json) {
      std::puts((entry_json(check.entry) + ",\"checked_bytes\":" +
                 std::to_string(check.checked_bytes) + ",\"damaged_bytes\":" +
                 std::to_string(check.damaged_bytes) + "}")
                    .c_str());
    } else if (check.damaged_ranges != 0) {
      std::printf("%s: %zu damaged %s (%s) dropped; the next load fetches them again\n",
                  check.entry.url.c_str(), check.damaged_ranges,
                  check.damaged_ranges == 1 ? "range" : "ranges",
                  format_byte_size(check.damaged_bytes).c_str());
    }
  }
  if (!arguments.json) {
    std::printf("checked %s in %zu %s\n", format_byte_size(checked).c_str(), checks.size(),
                checks.size() == 1 ? "entry" : "entries");
  }
  std::fflush(stdout);
  if (damaged != 0) {
    throw Error(std::to_string(damaged) + " damaged " + (damaged == 1 ? "range" : "ranges") +
                " found and dropped");
  }
}

void run_prune(const CacheArguments& arguments) {
  const auto older_than = parse_duration(arguments.older_than);
  print_entries(prune_cache(cache_directory(arguments), older_than), arguments.json, "removed ");
}

void run_rm(const CacheArguments& arguments) {
  std::vector<CacheEntryStatus> kept;
  const auto removed =
      remove_from_cache(cache_directory(arguments), cache_url(arguments.url), &kept);
  print_entries(removed, arguments.json, "removed ");
  std::fflush(stdout);
  if (!kept.empty()) {
    throw Error(arguments.url + ": " + std::to_string(kept.size()) +
                (kept.size() == 1 ? " entry is" : " entries are") +
                " in use by a running load and stay");
  }
  if (removed.empty()) throw NotFoundError(arguments.url, "not in the cache");
}

}  // namespace

void register_cache_command(CLI::App& app) {
  auto arguments = std::make_shared<CacheArguments>();
  auto* command = app.add_subcommand(
      "cache", "Look after a cache directory (--cache): ls, du, verify, prune, rm");
  command->require_subcommand(1);
  const auto add_common = [&](CLI::App* sub) {
    sub->add_option("--cache", arguments->directory,
                    "The cache directory; default: TENSORSTREAM_CACHE_DIR");
    sub->add_flag("--json", arguments->json, "A JSON object per line");
  };
  auto* ls = command->add_subcommand("ls", "List the entries: URL, bytes cached, version");
  add_common(ls);
  ls->callback([arguments] { run_ls(*arguments); });
  auto* du = command->add_subcommand(
      "du", "Bytes the entries take on disk, and the free space the cache keeps");
  add_common(du);
  du->add_option("--cache-min-free", arguments->min_free,
                 "The floor to report, as streams take it; default: "
                 "TENSORSTREAM_CACHE_MIN_FREE, else 10% or 5GiB, whichever is less");
  du->callback([arguments] { run_du(*arguments); });
  auto* verify = command->add_subcommand(
      "verify", "Check every cached range against its hash; drop those that fail (exit 1)");
  add_common(verify);
  verify->callback([arguments] { run_verify(*arguments); });
  auto* prune = command->add_subcommand(
      "prune", "Remove entries no load uses, last used longer ago than --older-than");
  add_common(prune);
  prune->add_option("--older-than", arguments->older_than,
                    "e.g. 90s, 30m, 12h, 7d; 0 (the default) removes every unused entry");
  prune->callback([arguments] { run_prune(*arguments); });
  auto* rm = command->add_subcommand("rm", "Remove the entries of one URL");
  add_common(rm);
  rm->add_option("url", arguments->url, "The object's URL, as streams name it")->required();
  rm->callback([arguments] { run_rm(*arguments); });
}

}  // namespace tensorstream::cli
