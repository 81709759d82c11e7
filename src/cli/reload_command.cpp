#include <simdjson.h>
#include <sys/types.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/store/client.hpp"

namespace tensorstream::cli {
namespace {

struct ReloadArguments {
  std::string socket;
  std::string source;
  bool json = false;
  double timeout_seconds = 3600;
  std::optional<uid_t> server_uid;
};

// "SOCKET: serving generation 2 of SRC: 2 ranks, 3.8 MiB, loaded in 0.4 s".
std::string summary(const std::string& socket, std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::object reply;
  std::uint64_t generation = 0;
  std::string_view source;
  double seconds = 0;
  simdjson::dom::array ranks;
  if (parser.parse(simdjson::padded_string(json)).get(reply) != simdjson::SUCCESS ||
      reply["generation"].get(generation) != simdjson::SUCCESS ||
      reply["source"].get(source) != simdjson::SUCCESS ||
      reply["seconds"].get(seconds) != simdjson::SUCCESS ||
      reply["ranks"].get(ranks) != simdjson::SUCCESS) {
    throw FormatError(socket + ": the reload reply is not one this tool reads");
  }
  std::uint64_t bytes = 0;
  std::size_t count = 0;
  for (simdjson::dom::element rank : ranks) {
    std::uint64_t rank_bytes = 0;
    if (rank["bytes"].get(rank_bytes) == simdjson::SUCCESS) bytes += rank_bytes;
    ++count;
  }
  char time[32];
  std::snprintf(time, sizeof time, "%.1f", seconds);
  return socket + ": serving generation " + std::to_string(generation) + " of " +
         std::string(source) + ": " + std::to_string(count) + (count == 1 ? " rank, " : " ranks, ") +
         format_byte_size(bytes) + ", loaded in " + time + " s";
}

// SRC as the server must read it: a relative path names a file where the user is, not where
// the server happens to run.
std::string source_for_server(const std::string& source) {
  if (source.empty() || source.find("://") != std::string::npos) return source;
  if (Url::parse(source).scheme != "file") return source;
  return std::filesystem::absolute(source).lexically_normal().string();
}

void run_reload(const ReloadArguments& arguments) {
  const auto timeout = timeout_flag(arguments.timeout_seconds, 86400);
  const store::ReceivedReply reply =
      store::request(arguments.socket, store::reload_request(source_for_server(arguments.source)),
                     timeout,
                     store::default_max_reply_bytes, arguments.server_uid);
  const std::string out = arguments.json ? reply.json : summary(arguments.socket, reply.json);
  std::puts(out.c_str());
  std::fflush(stdout);
}

}  // namespace

void register_reload_command(CLI::App& app) {
  auto arguments = std::make_shared<ReloadArguments>();
  auto* command = app.add_subcommand(
      "reload",
      "Have a store server load its checkpoint again (or SRC) into new memory and serve it once "
      "every rank is loaded; workers keep what they attached");
  command->add_option("socket", arguments->socket, "The store server's Unix socket")->required();
  command->add_option("src", arguments->source,
                      "What to load instead (default: the source served, read afresh)");
  command->add_flag("--json", arguments->json, "The server's reload reply, one JSON line");
  command
      ->add_option("--timeout", arguments->timeout_seconds,
                   "Seconds to wait for the new generation to be served (the reload goes on "
                   "after)")
      ->capture_default_str();
  command->add_option("--server-uid", arguments->server_uid,
                      "The uid the server runs as, where it is neither yours nor root's");
  command->callback([arguments] { run_reload(*arguments); });
}

}  // namespace tensorstream::cli
