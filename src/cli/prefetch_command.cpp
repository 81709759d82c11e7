#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/number_checks.hpp"
#include "cli/object_filter_flags.hpp"
#include "cli/store_flags.hpp"
#include "tensorstream/model/model_loader_config.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/transfer/hf_cache.hpp"
#include "tensorstream/transfer/prefetch.hpp"

namespace tensorstream::cli {
namespace {

struct PrefetchArguments {
  std::optional<std::string> url;
  std::optional<std::string> directory;
  bool include_safetensors = false;
  std::size_t concurrency = PrefetchOptions{}.max_concurrency;
  std::string chunk_size = "8MiB";
  tensorstream::detail::NamePatterns patterns;
  bool to_hf_cache = false;
  StoreFlags store;
};

void run_prefetch(const PrefetchArguments& arguments) {
  PrefetchOptions options;
  options.exclude_safetensors = !arguments.include_safetensors;
  options.store = apply_store_flags(arguments.store);
  options.max_concurrency = arguments.concurrency;
  options.chunk_size = parse_chunk_size(arguments.chunk_size);
  options.include = arguments.patterns.include;
  options.exclude = arguments.patterns.exclude;

  if (arguments.to_hf_cache) {
    if (!arguments.url || arguments.directory) {
      throw InvalidArgument("--to-hf-cache copies an hf:// URL into the Hugging Face cache; give "
                            "the URL and no directory");
    }
    const HfCachePrefetchResult result = prefetch_to_hf_cache_blocking(*arguments.url, options);
    std::printf("prefetched %s (%s) from %s to the Hugging Face cache at %s\n",
                counted(result.files.files.size(), "file").c_str(),
                format_byte_size(result.files.bytes).c_str(), arguments.url->c_str(),
                result.snapshot.c_str());
    std::fflush(stdout);
    return;
  }
  // The environment is read only for what the command line leaves out, so that a malformed
  // variable this command does not need cannot fail it.
  std::optional<ModelLoaderConfig> config;
  if (!arguments.url || !arguments.directory) config = ModelLoaderConfig::from_environment();
  const std::string url = arguments.url ? *arguments.url : config->required_remote_model_path();
  const std::string directory =
      arguments.directory ? *arguments.directory : config->required_local_model_path();

  const PrefetchResult result = prefetch_blocking(url, directory, options);
  std::printf("prefetched %s (%s) from %s to %s\n", counted(result.files.size(), "file").c_str(),
              format_byte_size(result.bytes).c_str(), redact_query(url).c_str(), directory.c_str());
  std::fflush(stdout);
}

}  // namespace

void register_prefetch_command(CLI::App& app) {
  auto arguments = std::make_shared<PrefetchArguments>();
  auto* command = app.add_subcommand(
      "prefetch", "Copy a model's other artifacts (config, tokenizer, ...) to a local directory "
      "or a bucket");
  command->add_option("url", arguments->url,
                      "Prefix to copy from: /path, file:///path, s3://bucket/path, gs://..., az://..., "
                      "hf://org/name[@revision]; "
                      "default: the configured remote model path");
  command->add_option("dir", arguments->directory,
                      "Directory to copy into (created if missing), or a file://, s3:// or "
                      "gs:// URL to upload to; default: the configured local model path "
                      "(TENSORSTREAM_LOCAL_MODEL_PATH)");
  command->add_flag("--include-safetensors", arguments->include_safetensors,
                    "Copy *.safetensors files too");
  command->add_option("--concurrency", arguments->concurrency, "Range reads in flight at once, over all files")
      ->capture_default_str()
      ->check(whole_number_up_to(tensorstream::detail::max_concurrency_limit));
  command->add_option("--chunk-size", arguments->chunk_size, "Bytes per range read")
      ->capture_default_str();
  add_object_filter_flags(*command, arguments->patterns);
  command->add_flag("--to-hf-cache", arguments->to_hf_cache,
                    "Copy an hf:// URL into the Hugging Face cache (HF_HUB_CACHE, else "
                    "HF_HOME/hub, else ~/.cache/huggingface/hub) in its layout, for "
                    "transformers and vLLM; no dir");
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_prefetch(*arguments); });
}

}  // namespace tensorstream::cli
