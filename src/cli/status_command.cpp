#include <simdjson.h>
#include <sys/types.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/number_checks.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/client.hpp"

namespace tensorstream::cli {
namespace {

struct StatusArguments {
  std::string socket;
  bool json = false;
  double timeout_seconds = 5;
  std::optional<uid_t> server_uid;
};

std::string_view text(simdjson::dom::element value) {
  std::string_view result;
  return value.get_string().get(result) == simdjson::SUCCESS ? result : std::string_view();
}

std::uint64_t count(simdjson::dom::element value) {
  std::uint64_t result = 0;
  return value.get_uint64().get(result) == simdjson::SUCCESS ? result : 0;
}

// "rank 1: ready, 1.9 MiB of 1.9 MiB, 2 workers attached, 0 waiting", or "rank 0: failed: why".
std::string rank_line(simdjson::dom::object rank) {
  const std::string state(text(rank["state"]));
  std::string line = "rank " + std::to_string(count(rank["rank"])) + ": " + state;
  if (state == "failed") return line + ": " + std::string(text(rank["error"]));
  return line + ", " + format_byte_size(count(rank["bytes_loaded"])) + " of " +
         format_byte_size(count(rank["bytes"])) + ", " +
         counted(count(rank["attached"]), "worker") + " attached, " +
         std::to_string(count(rank["waiting"])) + " waiting";
}

// "generation 1 of SRC still held: rank 0 by 1 worker, rank 1 by 2 workers".
std::string held_line(simdjson::dom::object generation) {
  std::string line = "generation " + std::to_string(count(generation["generation"])) + " of " +
                     std::string(text(generation["source"])) + " still held:";
  simdjson::dom::array ranks;
  if (generation["ranks"].get(ranks) != simdjson::SUCCESS) return line;
  const char* separator = " ";
  for (simdjson::dom::element rank : ranks) {
    line += separator + ("rank " + std::to_string(count(rank["rank"])) + " by ") +
            counted(count(rank["attached"]), "worker");
    separator = ", ";
  }
  return line;
}

// "reload: generation 2 of SRC loading, 1.0 MiB of 3.8 MiB", or "...: failed: why".
std::string reload_line(simdjson::dom::object reload) {
  const std::string state(text(reload["state"]));
  std::string line = "reload: generation " + std::to_string(count(reload["generation"])) +
                     " of " + std::string(text(reload["source"]));
  if (state == "failed") return line + " failed: " + std::string(text(reload["error"]));
  return line + " loading, " + format_byte_size(count(reload["bytes_loaded"])) + " of " +
         format_byte_size(count(reload["bytes"]));
}

void run_status(const StatusArguments& arguments) {
  const auto timeout = timeout_flag(arguments.timeout_seconds, 3600);
  const store::ReceivedReply reply =
      store::request(arguments.socket, store::status_request(), timeout,
                     store::default_max_reply_bytes, arguments.server_uid);
  if (arguments.json) {
    std::puts(reply.json.c_str());
    std::fflush(stdout);
    return;
  }
  simdjson::dom::parser parser;
  simdjson::dom::object status;
  simdjson::dom::array ranks;
  if (parser.parse(simdjson::padded_string(reply.json)).get(status) != simdjson::SUCCESS ||
      status["ranks"].get(ranks) != simdjson::SUCCESS) {
    throw FormatError(arguments.socket + ": the status reply is not one this tool reads");
  }
  const std::uint64_t generation = count(status["generation"]);
  std::string out = arguments.socket + ": serving " + std::string(text(status["source"])) +
                    (generation > 1 ? " (generation " + std::to_string(generation) + ")" : "") +
                    " at tp " + std::to_string(count(status["tp"])) + ", pid " +
                    std::to_string(count(status["pid"])) + ", up " +
                    std::to_string(count(status["uptime_seconds"])) + " s\n";
  for (simdjson::dom::element rank : ranks) {
    simdjson::dom::object fields;
    if (rank.get(fields) != simdjson::SUCCESS) continue;
    out += rank_line(fields) + "\n";
  }
  simdjson::dom::array held;
  if (status["held"].get(held) == simdjson::SUCCESS) {
    for (simdjson::dom::element old_generation : held) {
      simdjson::dom::object fields;
      if (old_generation.get(fields) == simdjson::SUCCESS) out += held_line(fields) + "\n";
    }
  }
  simdjson::dom::object reload;
  if (status["reload"].get(reload) == simdjson::SUCCESS) out += reload_line(reload) + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void register_status_command(CLI::App& app) {
  auto arguments = std::make_shared<StatusArguments>();
  auto* command = app.add_subcommand(
      "status", "Show what a store server serves: each rank's state, bytes and attached workers");
  command->add_option("socket", arguments->socket, "The store server's Unix socket")->required();
  command->add_flag("--json", arguments->json, "The server's status reply, one JSON line");
  command->add_option("--timeout", arguments->timeout_seconds, "Seconds to wait for the reply")
      ->capture_default_str();
  command->add_option("--server-uid", arguments->server_uid,
                      "The uid the server runs as, where it is neither yours nor root's");
  command->callback([arguments] { run_status(*arguments); });
}

}  // namespace tensorstream::cli
