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

#include "byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/object_filter_flags.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/store_flags.hpp"
#include "model/write_destination.hpp"
#include "storage/relative_key.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/copy_objects.hpp"
#include "tensorstream/model/hf_cache.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::cli {
namespace {

namespace asio = boost::asio;

struct CpArguments {
  std::string source;
  std::string destination;
  bool recursive = false;
  tensorstream::detail::NamePatterns patterns;
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

// What to copy under the prefix SRC names: every object, or those the patterns take, each to the
// same relative path under DST.
asio::awaitable<std::vector<ObjectCopy>> objects_under(ObjectStore& source, const Url& from,
                                                       const Url& to,
                                                       const tensorstream::detail::NamePatterns& patterns) {
  if (!source.can_list()) {
    throw InvalidArgument(source.url(from.path) +
                          ": this store cannot list a prefix (http(s) servers cannot); copy its "
                          "objects one by one");
  }
  const std::string prefix = from.is_prefix() ? from.path : from.path + "/";
  std::string target = to.path;
  if (!target.ends_with('/')) target += '/';
  const auto objects = co_await source.list(prefix, ListDepth::recursive);
  if (objects.empty()) throw NotFoundError(source.url(prefix), "nothing under this prefix");
  std::vector<ObjectCopy> copies;
  for (const auto& object : objects) {
    if (object.key.ends_with('/')) continue;  // a directory placeholder, not a file
    const std::string relative = object.key.substr(prefix.size());
    if (!patterns.selects(relative)) continue;
    if (!tensorstream::detail::is_relative_key_inside(relative)) {
      throw StorageError(source.url(object.key),
                         "cannot be copied: its key is not a plain relative path below " +
                             source.url(prefix));
    }
    copies.push_back({object.key, object.size, target + relative});
  }
  if (copies.empty()) {
    throw NotFoundError(source.url(prefix), "no object under this prefix matches " +
                                                patterns.spelled());
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
  options.include = arguments.patterns.include;
  options.exclude = arguments.patterns.exclude;
  if (!arguments.recursive) {
    if (from.is_prefix()) {
      throw InvalidArgument(arguments.source + " is a prefix; pass --recursive (-r) to copy what "
                            "is under it");
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
  arguments.patterns.check("object path");
  if (!arguments.recursive && !arguments.patterns.empty()) {
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
  std::size_t objects_total = 0;
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
      if (objects_total > 1) {
        files = std::to_string(objects_done.load()) + "/" + std::to_string(objects_total) +
                " files";
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
      copies = co_await objects_under(*source, from, to, arguments.patterns);
    } else {
      copies = co_await single_object(*source, from, to);
    }
    for (const auto& copy : copies) bytes += copy.size;
    objects_total = copies.size();
    bytes_total = bytes;
    co_await copy_objects(*source, std::move(copies), *destination, options);
  }());
  if (progress) progress->finish();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (arguments.json) {
    std::puts(summary_line(arguments, objects_total, bytes, elapsed.count(), source->stats())
                  .c_str());
  } else {
    std::printf("copied %s (%s) from %s to %s in %.3f s: %s\n",
                counted(objects_total, "file").c_str(), format_byte_size(bytes).c_str(),
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
  add_object_filter_flags(*command, arguments->patterns);
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
  command->callback([arguments] { run_cp(*arguments); });
}

}  // namespace tensorstream::cli
