#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/blocking_run.hpp"
#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/object_filter_flags.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/store_flags.hpp"
#include "model/unlisted_model_files.hpp"
#include "storage/relative_key.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/transfer/copy_objects.hpp"
#include "tensorstream/transfer/hf_cache.hpp"

namespace tensorstream::cli {
namespace {

namespace asio = boost::asio;

struct CpArguments {
  std::string source;
  std::string destination;
  bool recursive = false;
  // Where CLI11 stores --include and --exclude; `filters` has them in their order, which decides.
  tensorstream::detail::NamePatterns patterns;
  tensorstream::detail::OrderedNamePatterns filters;
  std::size_t concurrency = CopyOptions{}.max_concurrency;
  std::string chunk_size = "16MiB";
  bool json = false;
  std::string progress;
  bool to_hf_cache = false;
  StoreFlags store;
};

bool is_local_directory(const Url& url) {
  std::error_code ignored;
  return url.scheme == "file" && std::filesystem::is_directory(url.path, ignored);
}

// The last segment of a key: what a copy into a directory or prefix is named.
std::string base_name(const std::string& key) { return key.substr(key.rfind('/') + 1); }

// What to copy when SRC names one object; a missing object that is a prefix says how to copy it.
asio::awaitable<std::vector<ObjectCopy>> single_object(ObjectStore& source, const Url& from,
                                                       const Url& to) {
  std::optional<ObjectStat> stat;
  std::exception_ptr missing;
  try {
    stat = co_await source.stat(from.path);
  } catch (const NotFoundError&) {
    if (!source.can_list()) throw;
    missing = std::current_exception();
  }
  if (missing) {
    std::vector<ObjectInfo> under;
    try {
      under = co_await source.list(from.path + "/", ListDepth::recursive);
    } catch (const NotFoundError&) {
    }
    if (under.empty()) std::rethrow_exception(missing);
    throw InvalidArgument(source.url(from.path) +
                          " is a prefix, not an object; pass --recursive (-r) to copy what is "
                          "under it");
  }
  const bool into = to.is_prefix() || is_local_directory(to);
  std::string key = to.path;
  if (into) key += (key.ends_with('/') ? "" : "/") + base_name(from.path);
  co_return std::vector<ObjectCopy>{{from.path, stat->size, key}};
}

// What to copy under the prefix SRC names: every object, or those the filters take, each to the
// same relative path under DST. A store that cannot list (http(s)) gives the files a stream of
// the prefix would find, and the model's other files, asked for by name.
asio::awaitable<std::vector<ObjectCopy>> objects_under(
    ObjectStore& source, const Url& from, const Url& to,
    const tensorstream::detail::OrderedNamePatterns& filters, std::size_t concurrency) {
  const std::string prefix = from.is_prefix() ? from.path : from.path + "/";
  std::string target = to.path;
  if (!target.ends_with('/')) target += '/';
  std::vector<ObjectInfo> objects;
  if (source.can_list()) {
    objects = co_await source.list(prefix, ListDepth::recursive);
    if (objects.empty()) throw NotFoundError(source.url(prefix), "nothing under this prefix");
  } else {
    objects = co_await tensorstream::detail::unlisted_model_files(source, prefix, concurrency, true);
    if (objects.empty()) {
      throw NotFoundError(source.url(prefix),
                          "found no model.safetensors.index.json, model.safetensors, config.json "
                          "or other file of a model, and this store cannot list a prefix: copy "
                          "its objects one by one");
    }
  }
  std::vector<ObjectCopy> copies;
  std::vector<std::string> candidates;
  for (const auto& object : objects) {
    if (object.key.ends_with('/')) continue;  // a directory placeholder, not a file
    const std::string relative = object.key.substr(prefix.size());
    candidates.push_back(relative);
    if (!filters.selects(relative)) continue;
    if (!tensorstream::detail::is_relative_key_inside(relative)) {
      throw StorageError(source.url(object.key),
                         "cannot be copied: its key is not a plain relative path below " +
                             source.url(prefix));
    }
    copies.push_back({object.key, object.size, target + relative});
  }
  if (copies.empty()) {
    throw NotFoundError(source.url(prefix),
                        filters.nothing_taken(candidates, "object under this prefix"));
  }
  co_return copies;
}

std::string copied_line(const ObjectStore& source, const ObjectStore& destination,
                        const ObjectCopy& copy) {
  std::string line = "{";
  append_key(line, "copied");
  line += '{';
  append_key(line, "source");
  append_json_string(line, source.url(copy.key));
  append_key(line, "destination");
  append_json_string(line, destination.url(copy.destination_key));
  append_key(line, "bytes");
  line += std::to_string(copy.size);
  return line + "}}";
}

std::string summary_line(const CpArguments& arguments, std::size_t objects, std::uint64_t bytes,
                         double seconds, const StoreStats& reads) {
  std::string line = transfer_summary_start(redact_query(arguments.source),
                                            redact_query(arguments.destination));
  append_key(line, "objects");
  line += std::to_string(objects);
  append_key(line, "bytes");
  line += std::to_string(bytes);
  append_decimal(line, "seconds", seconds);
  append_decimal(line, "gb_per_s", seconds > 0 ? bytes / seconds / 1e9 : 0.0);
  append_key(line, "requests");
  line += std::to_string(reads.requests);
  append_key(line, "retries");
  line += std::to_string(reads.retries);
  // As a stream's summary gives them, where --cache read through a cache.
  if (reads.io_mode.ends_with("cache")) {
    append_key(line, "cache_bytes");
    line += std::to_string(reads.cached_bytes);
    append_key(line, "source_bytes");
    line += std::to_string(reads.bytes - std::min(reads.bytes, reads.cached_bytes));
  }
  return line + "}}";
}

// cp --to-hf-cache: SRC's files into the Hugging Face cache, in its layout.
void run_cp_to_hf_cache(const CpArguments& arguments) {
  Url from = Url::parse(arguments.source);
  PrefetchOptions options;
  options.exclude_safetensors = false;
  options.max_concurrency = arguments.concurrency;
  options.chunk_size = parse_chunk_size(arguments.chunk_size);
  options.store = apply_store_flags(arguments.store);
  if (arguments.filters.order_matters()) {
    throw InvalidArgument("--to-hf-cache applies every --exclude after the --include patterns; "
                          "give the --include patterns first");
  }
  const tensorstream::detail::NamePatterns patterns = arguments.filters.unordered();
  options.include = patterns.include;
  options.exclude = patterns.exclude;
  if (!arguments.recursive) {
    // hf://ORG/NAME[@REVISION] names the repository, whose files are under it.
    if (from.is_prefix() || from.path.rfind('/') == 0) {
      throw InvalidArgument(redact_query(arguments.source) +
                            " is a prefix, not an object; pass --recursive (-r) to copy what is "
                            "under it");
    }
    // One file: its folder, taking that file alone.
    const auto slash = from.path.rfind('/');
    options.include = {from.path.substr(slash + 1)};
    from.path.resize(slash + 1);
  }
  const auto start = std::chrono::steady_clock::now();
  const HfCachePrefetchResult result = prefetch_to_hf_cache_blocking(from.str(), options);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("copied %s (%s) from %s to the Hugging Face cache at %s in %.3f s\n",
              counted(result.files.files.size(), "file").c_str(),
              format_byte_size(result.files.bytes).c_str(), arguments.source.c_str(),
              result.snapshot.c_str(), elapsed.count());
  std::fflush(stdout);
}

void run_cp(const CpArguments& arguments) {
  arguments.filters.unordered().check("object path");
  if (!arguments.recursive && !arguments.filters.empty()) {
    throw InvalidArgument("--include and --exclude choose objects under a prefix; they need "
                          "--recursive (-r)");
  }
  if (arguments.to_hf_cache != arguments.destination.empty()) {
    throw InvalidArgument(arguments.to_hf_cache ? "--to-hf-cache copies into the Hugging Face "
                                                  "cache; give no DST with it"
                                                : "cp needs a DST, or --to-hf-cache");
  }
  if (arguments.to_hf_cache) {
    run_cp_to_hf_cache(arguments);
    return;
  }
  const Url from = Url::parse(arguments.source);
  const Url to = Url::parse(arguments.destination);
  if (!arguments.recursive && (from.is_prefix() || is_local_directory(from))) {
    throw InvalidArgument(redact_query(arguments.source) +
                          " is a directory or prefix; pass --recursive (-r) to copy what is "
                          "under it");
  }
  CopyOptions options;
  options.max_concurrency = arguments.concurrency;
  options.chunk_size = parse_chunk_size(arguments.chunk_size);
  const StoreOptions store_options = apply_store_flags(arguments.store);

  asio::io_context io;
  const auto source = open_store(from, io.get_executor(), store_options);
  const auto destination = open_store(to, io.get_executor(), store_options);
  if (!destination->can_write()) destination->create_writer(to.path);  // says why it cannot

  std::atomic<std::uint64_t> bytes_done{0};
  std::atomic<std::uint64_t> bytes_total{0};
  std::atomic<std::size_t> objects_done{0};
  // Written once the copies are known, while the progress thread may be reading it.
  std::atomic<std::size_t> objects_total{0};
  options.on_progress = [&](std::uint64_t bytes) { bytes_done = bytes; };
  options.on_object_copied = [&](const ObjectCopy& copy) {
    ++objects_done;
    if (arguments.json) {
      std::puts(copied_line(*source, *destination, copy).c_str());
      std::fflush(stdout);
    }
  };
  std::optional<ProgressDisplay> progress;
  if (const auto style = progress_style(arguments.progress, arguments.json)) {
    progress.emplace(*style, [&] {
      std::string files;
      if (const std::size_t total = objects_total; total > 1) {
        files = std::to_string(objects_done.load()) + "/" + std::to_string(total) + " files";
      }
      // Whichever side has kept a request waiting longer: downloads wait on the source, uploads
      // on the destination.
      const StoreStats reads = source->stats();
      const StoreStats writes = destination->stats();
      const StoreStats& waits = reads.waiting_seconds >= writes.waiting_seconds ? reads : writes;
      return ProgressSample{bytes_done, bytes_total, files, waits.waiting_for,
                            waits.waiting_seconds};
    });
  }

  const auto start = std::chrono::steady_clock::now();
  std::uint64_t bytes = 0;
  tensorstream::detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    std::vector<ObjectCopy> copies;
    if (arguments.recursive) {
      copies = co_await objects_under(*source, from, to, arguments.filters,
                                      arguments.concurrency);
    } else {
      copies = co_await single_object(*source, from, to);
    }
    for (const auto& copy : copies) bytes += copy.size;
    objects_total = copies.size();
    bytes_total = bytes;
    co_await copy_objects(*source, std::move(copies), *destination, options);
  }());
  // The summary below says what the bar's final line would.
  if (progress) progress->finish_before_summary();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (arguments.json) {
    std::puts(
        summary_line(arguments, objects_total.load(), bytes, elapsed.count(), source->stats())
            .c_str());
  } else {
    std::printf("copied %s (%s) from %s to %s in %.3f s: %s\n",
                counted(objects_total.load(), "file").c_str(), format_byte_size(bytes).c_str(),
                redact_query(arguments.source).c_str(),
                redact_query(arguments.destination).c_str(), elapsed.count(),
                format_byte_rate(bytes, elapsed.count()).c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void register_cp_command(CLI::App& app) {
  auto arguments = std::make_shared<CpArguments>();
  auto* command = app.add_subcommand(
      "cp", "Copy an object, or with -r every object under a prefix, from any source to a "
            "directory or bucket");
  command
      ->add_option("src", arguments->source,
                   "Object, or with -r a directory or prefix: /path, file:///path, "
                   "http(s)://host/path, s3://bucket/key, gs://bucket/key, az://container/key, "
                   "hf://org/name[@revision]/path")
      ->required();
  command
      ->add_option("dst", arguments->destination,
                   "File or directory (created if missing), or a file://, s3://, gs:// or az:// "
                   "URL; a trailing '/' or an existing directory copies into it under SRC's "
                   "name");
  command->add_flag("-r,--recursive", arguments->recursive,
                    "Copy every object under the prefix SRC, keeping their paths below it");
  add_object_filter_flags(*command, arguments->patterns, FilterOrder::later_wins);
  command
      ->add_option("--concurrency", arguments->concurrency,
                   "Range reads in flight at once, over all files")
      ->capture_default_str()
      ->check(whole_number_up_to(tensorstream::detail::max_concurrency_limit));
  command
      ->add_option("--chunk-size", arguments->chunk_size,
                   "Bytes per range read and per uploaded part; memory stays below "
                   "concurrency × chunk size, plus at most three parts per file being uploaded")
      ->capture_default_str();
  command->add_flag("--json", arguments->json,
                    "One JSON object per file copied, as each completes, then a summary");
  add_progress_flag(*command, arguments->progress);
  command->add_flag("--to-hf-cache", arguments->to_hf_cache,
                    "Copy an hf:// SRC into the Hugging Face cache (HF_HUB_CACHE, else "
                    "HF_HOME/hub, else ~/.cache/huggingface/hub) in its layout, for transformers "
                    "and vLLM; no DST");
  add_store_flags(*command, arguments->store);
  command->callback([arguments, command] {
    arguments->filters = filters_in_order(*command);
    run_cp(*arguments);
  });
}

}  // namespace tensorstream::cli
