// tensorstream: stream safetensors checkpoints from object storage into memory.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/suggestion.hpp"
#include "tensorstream/error.hpp"

using tensorstream::cli::suggestion;

int main(int argc, char** argv) {
  CLI::App app{"Streams safetensors checkpoints from object storage (file://, http(s)://, s3://, "
               "gs://) into memory, tensor by tensor as they complete."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tensorstream " TENSORSTREAM_VERSION_TEXT,
                       "Print the version and exit");
  tensorstream::cli::register_stream_command(app);
  tensorstream::cli::register_inspect_command(app);
  tensorstream::cli::register_ls_command(app);
  tensorstream::cli::register_bench_command(app);
  tensorstream::cli::register_gen_model_command(app);
  tensorstream::cli::register_prefetch_command(app);
  tensorstream::cli::register_shard_command(app);
  tensorstream::cli::register_partition_command(app);
  tensorstream::cli::register_cleanup_command(app);
  tensorstream::cli::register_serve_command(app);
  tensorstream::cli::register_attach_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version print their text and succeed; every other parse error is a usage error, one line.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::string message = error.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    // CLI11 reports a word that names no command as a missing one.
    if (argc > 1 && argv[1][0] != '-') {
      const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
      const bool known = std::any_of(commands.begin(), commands.end(),
                                     [&](const CLI::App* c) { return c->get_name() == argv[1]; });
      if (!known) message = "unknown command '" + std::string(argv[1]) + "'";
    }
    const std::string hint =
        suggestion(app, std::vector<std::string>(argv + 1, argv + argc));
    std::fprintf(stderr, "tensorstream: error: %s (%s)\n", message.c_str(),
                 hint.empty() ? "see tensorstream --help" : hint.c_str());
    return 2;
  } catch (const tensorstream::InvalidArgument& error) {
    std::fprintf(stderr, "tensorstream: error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tensorstream: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
