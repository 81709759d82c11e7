#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/existing_directory.hpp"
#include "cli/json_writer.hpp"
#include "cli/store_flags.hpp"
#include "cli/time_text.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream::cli {
namespace {

struct CleanupArguments {
  std::string url;
  std::string older_than = "0";
  bool json = false;
  StoreFlags store;
};

// The URL and the store prefix (starting and ending with '/') that `text` names: a local path
// (relative to the working directory) or a file:// or bucket URL; `s3://bucket/llama` means the
// prefix `llama/`, as for `ls`.
std::pair<Url, std::string> cleanup_prefix(const std::string& text) {
  Url url = Url::parse(text);
  if (url.scheme == "file") {
    url.path = std::filesystem::absolute(url.path).lexically_normal().string();
    require_directory(url.path);
  }
  std::string prefix = url.path.empty() || url.path.front() != '/' ? "/" + url.path : url.path;
  if (prefix.back() != '/') prefix += '/';
  return {url, prefix};
}

void run_cleanup(const CleanupArguments& arguments) {
  const auto older_than = parse_duration(arguments.older_than);
  const auto [url, prefix] = cleanup_prefix(arguments.url);
  boost::asio::io_context io;
  const auto store = open_store(url, io.get_executor(), apply_store_flags(arguments.store));
  const std::string listed = store->url(prefix);
  if (!store->can_write()) {
    throw InvalidArgument(listed + ": nothing to clean up: no writer uploads to " + url.scheme +
                          "://; cleanup works on file:// and s3://");
  }
  auto cleaning = boost::asio::co_spawn(io, store->abort_stale_uploads(prefix, older_than),
                                        boost::asio::use_future);
  io.run();
  const StaleUploads stale = cleaning.get();

  for (const StaleUpload& upload : stale.removed) {
    const std::string object = store->url(upload.key);
    const std::string started = utc_text(upload.started);
    if (arguments.json) {
      std::string line = "{";
      append_key(line, "url");
      append_json_string(line, object);
      append_key(line, "upload");
      append_json_string(line, upload.upload);
      append_key(line, "started");
      append_json_string(line, started);
      line += '}';
      std::puts(line.c_str());
    } else {
      std::printf("removed %s: upload %s from %s\n", object.c_str(), upload.upload.c_str(),
                  started.c_str());
    }
  }
  if (arguments.json) {
    std::printf("{\"summary\":{\"removed\":%zu,\"kept\":%zu}}\n", stale.removed.size(),
                stale.kept);
    return;
  }
  std::printf("%zu stale %s removed under %s", stale.removed.size(),
              stale.removed.size() == 1 ? "upload" : "uploads", listed.c_str());
  if (stale.kept != 0) {
    std::printf("; %zu more recent than %s kept", stale.kept, arguments.older_than.c_str());
  }
  std::printf("\n");
}

}  // namespace

void register_cleanup_command(CLI::App& app) {
  auto arguments = std::make_shared<CleanupArguments>();
  auto* command = app.add_subcommand(
      "cleanup", "Remove what killed writers left behind: temporary files (file://) and "
                 "unfinished multipart uploads (s3://)");
  command->add_option("url", arguments->url,
                      "Directory or prefix to clean, at any depth: /path, file:///path, "
                      "s3://bucket/prefix")
      ->required();
  command->add_option("--older-than", arguments->older_than,
                      "Keep uploads started (files: last written) less than this long ago, e.g. "
                      "90s, 30m, 12h, 7d; 0 removes all")
      ->capture_default_str();
  command->add_flag("--json", arguments->json,
                    "One JSON object per removed upload, then a summary object");
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_cleanup(*arguments); });
}

}  // namespace tensorstream::cli
