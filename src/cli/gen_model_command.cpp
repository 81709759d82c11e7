#include <cstdio>
#include <memory>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/number_checks.hpp"
#include "cli/store_flags.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream::cli {

void register_gen_model_command(CLI::App& app) {
  auto destination = std::make_shared<std::string>();
  auto options = std::make_shared<SyntheticModelOptions>();
  auto store = std::make_shared<StoreFlags>();
  auto* command =
      app.add_subcommand("gen-model", "Write a synthetic Llama-shaped checkpoint for tests and demos");
  command
      ->add_option("dir", *destination,
                   "Directory to write into (created if missing), or the URL of a prefix of a "
                   "store that can write: file://, s3://, ...")
      ->required();
  command->add_option("--preset", options->preset, "tiny or llama-7b-4layers")
      ->capture_default_str();
  command->add_option("--shards", options->shards, "Number of .safetensors files")
      ->capture_default_str()
      ->check(positive_number);
  command->add_flag("--index", options->index, "Also write model.safetensors.index.json");
  add_store_flags(*command, *store);
  command->callback([destination, options, store] {
    options->store = apply_store_flags(*store);
    const SyntheticModel model = generate_synthetic_model(*destination, *options);
    std::printf("wrote %s (%s) in %s to %s\n", counted(model.tensors, "tensor").c_str(),
                format_byte_size(model.tensor_bytes).c_str(),
                counted(model.shards.size(), "shard").c_str(), destination->c_str());
  });
}

}  // namespace tensorstream::cli
