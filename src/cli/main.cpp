// tensorstream: stream safetensors checkpoints from object storage into memory.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.hpp"
#include "tensorstream/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Streams safetensors checkpoints from object storage (file://, http(s)://, s3://, "
               "gs://) into memory, tensor by tensor as they complete."};
  app.require_subcommand(1);
  tensorstream::cli::register_stream_command(app);
  tensorstream::cli::register_inspect_command(app);
  tensorstream::cli::register_ls_command(app);
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
    // --help prints its text and succeeds; every other parse error is a usage error, one line.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::string message = error.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::fprintf(stderr, "tensorstream: error: %s (see tensorstream --help)\n", message.c_str());
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
