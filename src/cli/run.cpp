#include "cli/run.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/interruption.hpp"
#include "cli/number_checks.hpp"
#include "cli/suggestion.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream::cli {
namespace {

// -v and -q beat TENSORSTREAM_LOG, which beats the default. A variable that names no level is a
// usage error here, not the library's warning: the user asked for output they would not get.
LogLevel chosen_log_level(int verbose, bool quiet) {
  if (quiet) return LogLevel::error;
  if (verbose >= 2) return LogLevel::trace;
  if (verbose == 1) return LogLevel::debug;
  const char* variable = std::getenv("TENSORSTREAM_LOG");
  if (variable == nullptr || *variable == '\0') return LogLevel::warning;
  if (auto level = parse_log_level(variable)) return *level;
  throw InvalidArgument("TENSORSTREAM_LOG=" + std::string(variable) + " is not a log level (" +
                        std::string(log_level_names) + ")");
}

// The subcommand of `parent` called `name`; null for none.
const CLI::App* find_command(const CLI::App& parent, const std::string& name) {
  for (const CLI::App* command : parent.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->get_name() == name) return command;
  }
  return nullptr;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"Streams safetensors checkpoints from object storage (file://, http(s)://, s3://, "
               "gs://, az://, hf://) into memory, tensor by tensor as they complete.",
               "tensorstream"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tensorstream " TENSORSTREAM_VERSION_TEXT,
                       "Print the version and exit");
  // Global flags are accepted after the command too: `tensorstream stream URL -v`.
  app.fallthrough();
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose,
               "Say more on stderr: -v what was chosen (credentials, endpoint, connections), "
               "-vv every HTTP request");
  app.add_flag("-q,--quiet", quiet, "Say only errors on stderr: no warnings")
      ->excludes("--verbose");
  // Before any command's callback, so that the command logs at the level asked for.
  app.parse_complete_callback([&] {
    set_log_level(chosen_log_level(verbose, quiet));
    check_environment_chunk_size();
  });
  register_stream_command(app);
  register_inspect_command(app);
  register_ls_command(app);
  register_bench_command(app);
  register_gen_model_command(app);
  register_cp_command(app);
  register_prefetch_command(app);
  register_shard_command(app);
  register_partition_command(app);
  register_cleanup_command(app);
  register_cache_command(app);
  register_serve_command(app);
  register_attach_command(app);
  register_status_command(app);
  register_reload_command(app);
  // Global flags are listed once, at the top; each command's help says they exist.
  for (CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    command->footer("Every command also takes -v (-vv: every HTTP request) and -q; see "
                    "tensorstream --help.");
  }
  // A bare `tensorstream` is someone looking for the commands: show them, as a usage error.
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  const Interruption interruption;
  // A command cut short by SIGINT or SIGTERM fails with whatever its cancelled work threw; the
  // user wants to hear only that it stopped, and the shell's status for the signal.
  const auto interrupted = [&] {
    std::fputs("tensorstream: interrupted\n", stderr);
    return 128 + interruption.signal();
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version print their text and succeed; every other parse error is a usage error, one line.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::string message = error.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    // CLI11 reports a word that names no command as a missing one, also after `cache`.
    std::string help = "tensorstream --help";
    if (argc > 1 && argv[1][0] != '-') {
      const CLI::App* command = find_command(app, argv[1]);
      if (command == nullptr) {
        message = "unknown command '" + std::string(argv[1]) + "'";
      } else {
        help = "tensorstream " + command->get_name() + " --help";
        const bool has_commands =
            !command->get_subcommands([](const CLI::App*) { return true; }).empty();
        if (has_commands && argc > 2 && argv[2][0] != '-' &&
            find_command(*command, argv[2]) == nullptr) {
          message = "unknown command '" + command->get_name() + " " + argv[2] + "'";
        }
      }
    }
    const std::string hint =
        suggestion(app, std::vector<std::string>(argv + 1, argv + argc));
    std::fprintf(stderr, "tensorstream: error: %s (%s)\n", message.c_str(),
                 hint.empty() ? ("see " + help).c_str() : hint.c_str());
    return 2;
  } catch (const InvalidArgument& error) {
    if (interruption.signal() != 0) return interrupted();
    std::fprintf(stderr, "tensorstream: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    if (interruption.signal() != 0) return interrupted();
    std::fprintf(stderr, "tensorstream: error: %s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace tensorstream::cli
