#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/object_filter_flags.hpp"
#include "cli/store_flags.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/storage/s3_store.hpp"
#include "tensorstream/streaming/resolve_url.hpp"

namespace tensorstream::cli {
namespace {

struct LsArguments {
  std::string url;
  bool recursive = false;
  bool json = false;
  bool human = false;
  tensorstream::detail::NamePatterns patterns;
  StoreFlags store;
};

// Local paths are resolved as a stream resolves them (a directory named without its trailing '/'
// is listed, as `ls` would); bucket paths are taken as written, so that an object is shown
// rather than taken for a prefix.
Url listing_url(const std::string& text) {
  const Url url = Url::parse(text);
  return url.scheme == "file" ? resolve_url(text) : url;
}

// Where a listing looks, as `aws s3 ls` takes a URL: the level that holds it (a prefix, ending
// in '/') and, for a URL that ends in no '/', the start of the names taken from that level.
struct ListedLevel {
  std::string prefix;
  std::string name_start;
};

// A bucket or container alone, or a Hub repository alone (hf://ORG/NAME[@REV]): a level of its
// own, since nothing above it lists.
bool names_a_root(const Url& url) {
  return url.path.empty() || url.path == "/" ||
         (url.scheme == "hf" && url.path.find('/', 1) == std::string::npos);
}

ListedLevel listed_level(const Url& url) {
  if (url.is_prefix()) return {url.path, {}};
  if (names_a_root(url)) return {url.path + "/", {}};
  const std::size_t slash = url.path.rfind('/');
  return {url.path.substr(0, slash + 1), url.path.substr(slash + 1)};
}

// Keeps the entries of `listing` whose names below the level begin with its name_start.
void keep_names_starting(Listing& listing, const ListedLevel& level) {
  const std::string start = level.prefix + level.name_start;
  std::erase_if(listing.objects,
                [&](const ObjectInfo& object) { return !object.key.starts_with(start); });
  std::erase_if(listing.prefixes,
                [&](const std::string& below) { return !below.starts_with(start); });
}

// What `url` names. Where the store lists (local files aside, whose directories are prefixes
// already): the entries of `level`, one level deep with the prefixes below as `aws s3 ls` shows
// them, or every key under it with -r, whose names begin with the URL's last part
// (`s3://models/ti` lists `tiny/` and `tiny2/`). Elsewhere, the object itself.
boost::asio::awaitable<Listing> list_objects(ObjectStore& store, const Url& url,
                                             const ListedLevel& level, bool recursive) {
  if (!store.can_list() || (url.scheme == "file" && !url.is_prefix())) {
    Listing object;
    const std::uint64_t size = co_await store.size(url.path);
    object.objects.push_back(ObjectInfo{url.path, size});
    co_return object;
  }
  Listing listing;
  if (recursive) {
    listing.objects = co_await store.list(level.prefix, ListDepth::recursive);
  } else {
    listing = co_await store.list_level(level.prefix);
  }
  keep_names_starting(listing, level);
  co_return listing;
}

// Keeps the objects whose path below `prefix` (a named object: its name) the patterns take, and
// no prefixes: the patterns choose objects, and -r reaches those below the prefixes. Returns the
// paths they chose from.
std::vector<std::string> select_objects(Listing& listing, const std::string& prefix,
                                        const tensorstream::detail::NamePatterns& patterns) {
  std::vector<std::string> paths;
  std::erase_if(listing.objects, [&](const ObjectInfo& object) {
    paths.push_back(object.key.starts_with(prefix) ? object.key.substr(prefix.size())
                                                   : object.key.substr(object.key.rfind('/') + 1));
    return !patterns.selects(paths.back());
  });
  listing.prefixes.clear();
  return paths;
}

void print_json(const std::string& url, std::optional<std::uint64_t> size) {
  std::string line = "{";
  append_key(line, "url");
  append_json_string(line, url);
  if (size) {
    append_key(line, "size");
    line += std::to_string(*size);
  } else {
    append_key(line, "prefix");
    line += "true";
  }
  line += '}';
  std::puts(line.c_str());
}

// `ls s3://`: the buckets, as `aws s3 ls` lists them without one.
void list_buckets(const LsArguments& arguments) {
  const StoreOptions options = apply_store_flags(arguments.store);
  boost::asio::io_context io;
  auto listed = boost::asio::co_spawn(
      io, list_s3_buckets(io.get_executor(), options.http(), options.s3()), boost::asio::use_future);
  io.run();
  const std::vector<std::string> buckets = listed.get();
  for (const auto& bucket : buckets) {
    const std::string url = "s3://" + bucket + "/";
    if (arguments.json) {
      std::string line = "{";
      append_key(line, "url");
      append_json_string(line, url);
      append_key(line, "bucket");
      line += "true}";
      std::puts(line.c_str());
    } else {
      std::printf("%12s  %s\n", "BUCKET", url.c_str());
    }
  }
  if (!arguments.json) std::printf("%s\n", counted(buckets.size(), "bucket").c_str());
}

void run_ls(const LsArguments& arguments) {
  if (arguments.url == "s3://") {
    list_buckets(arguments);
    return;
  }
  const Url url = listing_url(arguments.url);
  boost::asio::io_context io;
  const auto store = open_store(url, io.get_executor(), apply_store_flags(arguments.store));
  const ListedLevel level = listed_level(url);
  auto listed = boost::asio::co_spawn(io, list_objects(*store, url, level, arguments.recursive),
                                      boost::asio::use_future);
  io.run();
  Listing listing = listed.get();
  const std::string listed_url = store->url(level.prefix + level.name_start);
  // As `aws s3 ls` exits 1 there: a mistyped prefix is not an empty model.
  if (listing.objects.empty() && listing.prefixes.empty()) {
    throw NotFoundError(listed_url, "nothing under this prefix");
  }
  if (!arguments.patterns.empty()) {
    const auto paths = select_objects(listing, level.prefix, arguments.patterns);
    if (listing.objects.empty()) {
      throw NotFoundError(listed_url,
                          arguments.patterns.nothing_taken(paths, "object under this prefix"));
    }
  }

  // Prefixes first, as `aws s3 ls` shows them, in the column where sizes go.
  for (const auto& below : listing.prefixes) {
    if (arguments.json) {
      print_json(store->url(below), std::nullopt);
    } else {
      std::printf("%12s  %s\n", "PRE", store->url(below).c_str());
    }
  }
  std::uint64_t total = 0;
  for (const auto& object : listing.objects) {
    total += object.size;
    const std::string object_url = store->url(object.key);
    if (arguments.json) {
      print_json(object_url, object.size);
    } else if (arguments.human) {
      std::printf("%12s  %s\n", format_byte_size(object.size).c_str(), object_url.c_str());
    } else {
      std::printf("%12llu  %s\n", static_cast<unsigned long long>(object.size),
                  object_url.c_str());
    }
  }
  if (!arguments.json) {
    const std::size_t objects = listing.objects.size();
    std::printf("%zu %s, %s", objects, objects == 1 ? "object" : "objects",
                format_byte_size(total).c_str());
    if (const std::size_t prefixes = listing.prefixes.size(); prefixes != 0) {
      std::printf("; %zu %s", prefixes, prefixes == 1 ? "prefix" : "prefixes");
    }
    std::printf("\n");
  }
}

}  // namespace

void register_ls_command(CLI::App& app) {
  auto arguments = std::make_shared<LsArguments>();
  auto* command =
      app.add_subcommand("ls", "List objects with their sizes, and the prefixes below (PRE)");
  command->add_option("url", arguments->url,
                      "Object or prefix: /path, file:///path, s3://bucket/prefix/, "
                      "gs://bucket/prefix/, az://container/prefix/, hf://org/name[@revision]/; s3:// "
                      "alone lists the buckets")
      ->required();
  command->add_flag("-r,--recursive", arguments->recursive, "Include objects at any depth");
  command->add_flag("-H,--human-readable", arguments->human, "Sizes in KiB, MiB, GiB");
  command->add_flag("--json", arguments->json,
                    "One JSON object per object ({\"url\", \"size\"}) and per prefix "
                    "({\"url\", \"prefix\": true})");
  add_object_filter_flags(*command, arguments->patterns);
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_ls(*arguments); });
}

}  // namespace tensorstream::cli
