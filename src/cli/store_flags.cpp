#include "cli/number_checks.hpp"
#include "cli/store_flags.hpp"

#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/cache_options.hpp"
#include "tensorstream/storage/scheme.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tensorstream::cli {
namespace {

std::string seconds_text(std::chrono::milliseconds duration) {
  return std::to_string(duration.count() / 1000);
}

// "; taken by s3:// and az://": the registered schemes that take `setting`, the ones a program
// added included, as the help of the flag that sets it names them.
std::string taken_by(CommonSetting setting) {
  const std::vector<std::string> names = schemes_taking(setting);
  std::string text = "; taken by ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " and " : ", ";
    text += names[i] + "://";
  }
  return text;
}

// At least a millisecond, so that a tiny positive value does not turn into "no time at all".
std::chrono::milliseconds milliseconds(double seconds) {
  return std::chrono::milliseconds(std::max<long long>(std::llround(seconds * 1000.0), 1));
}

}  // namespace

void add_store_flags(CLI::App& command, StoreFlags& flags) {
  // Each scheme resolves what a flag leaves unset as docs/object-stores.md says for it.
  using enum CommonSetting;
  command.add_flag("--no-sign-request", flags.no_sign_request,
                   "Send requests without credentials, for public buckets, containers and "
                   "repositories" +
                       taken_by(anonymous));
  command.add_option("--profile", flags.profile,
                     "Profile of the service's shared credentials and config files, as the AWS "
                     "CLI's --profile names one: its keys win over the environment's" +
                         taken_by(profile));
  command.add_option("--region", flags.region,
                     "Region of the service; default: the environment's, else the scheme's own" +
                         taken_by(region));
  command.add_option("--endpoint-url", flags.endpoint_url,
                     "Endpoint of the service: a compatible server or an emulator, e.g. "
                     "http://127.0.0.1:9000; default: the environment's, else the service's own" +
                         taken_by(endpoint));
  command.add_option("--account", flags.account,
                     "Storage account the URLs name; default: the environment's" +
                         taken_by(account));
  command.add_option("--ca-bundle", flags.ca_bundle,
                     "PEM file of CAs trusted for https; default: AWS_CA_BUNDLE for s3://, "
                     "else the system's (SSL_CERT_FILE)");
  command.add_flag("--insecure", flags.insecure,
                   "Do not verify TLS certificates (anyone on the path can read and change the "
                   "bytes)");
  const HttpOptions defaults;
  command
      .add_option("--retries", flags.retries,
                  "Attempts after the first for transient HTTP failures (default " +
                      std::to_string(defaults.max_retries) + ")")
      ->check(non_negative_number);
  command
      .add_option("--connect-timeout", flags.connect_timeout,
                  "Seconds to resolve, connect and handshake (default " +
                      seconds_text(defaults.connect_timeout) + ")")
      ->check(positive_number);
  command
      .add_option("--response-timeout", flags.response_timeout,
                  "Seconds a request waits for the server's response before it is retried "
                  "(default: TENSORSTREAM_RESPONSE_TIMEOUT, else " +
                      seconds_text(HttpOptions::default_response_timeout) + ")")
      ->check(positive_number);
  command
      .add_option("--read-timeout", flags.read_timeout,
                  "Seconds a response may go without a byte of its body before the request is "
                  "retried (default " +
                      seconds_text(defaults.read_timeout) + ")")
      ->check(positive_number);
  command
      .add_option("--direct-io", flags.direct_io,
                  "Read local files past the page cache (O_DIRECT): auto (files mostly not "
                  "cached), on or off; default: TENSORSTREAM_DIRECT_IO, else auto")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  command.add_option("--cache", flags.cache,
                     "Keep what is read from sources in DIR and read it from there next time, "
                     "checked against its hash (docs/cache.md); default: TENSORSTREAM_CACHE_DIR, "
                     "else no cache");
  command.add_option("--cache-size", flags.cache_size,
                     "Most bytes the cache takes: least recently used entries no stream uses "
                     "are removed; default: TENSORSTREAM_CACHE_SIZE, else no bound");
  command
      .add_option("--cache-mode", flags.cache_mode,
                  "readwrite (read and fill the cache), read (only read it), offline (ask the "
                  "source nothing: what the cache lacks is an error) or off; default: "
                  "TENSORSTREAM_CACHE_MODE, else readwrite")
      ->check(CLI::IsMember({"readwrite", "read", "offline", "off"}));
  command.add_option("--cache-min-free", flags.cache_min_free,
                     "What stays free on the cache's disk, a size or a share (10%): least "
                     "recently used entries no stream uses are removed, then the cache stops "
                     "filling; default: TENSORSTREAM_CACHE_MIN_FREE, else 10% or 5GiB, whichever "
                     "is less");
  // The name --read-timeout had before `attach --timeout` gave --timeout another meaning; kept
  // out of the help, so that new scripts use the new one.
  command.add_option("--timeout", flags.timeout)->check(positive_number)->group("");
}

StoreOptions apply_store_flags(const StoreFlags& flags, StoreOptions options) {
  // Before any thread of the command starts, since a scheme may set the environment (s3:// names
  // a profile as AWS_PROFILE).
  apply_common_settings({.anonymous = flags.no_sign_request,
                         .endpoint = flags.endpoint_url,
                         .region = flags.region,
                         .account = flags.account,
                         .profile = flags.profile},
                        options);
  if (!flags.ca_bundle.empty()) options.http().ca_file = flags.ca_bundle;
  if (flags.insecure) {
    options.http().verify_peer = false;
    // A warning like any other, so that -q silences it once the user has seen it.
    log(LogLevel::warning, "--insecure: TLS certificates are not verified");
  }
  if (flags.retries) options.http().max_retries = *flags.retries;
  if (flags.connect_timeout) options.http().connect_timeout = milliseconds(*flags.connect_timeout);
  if (flags.response_timeout) {
    options.http().response_timeout = milliseconds(*flags.response_timeout);
  }
  if (flags.timeout) {
    if (flags.read_timeout) throw InvalidArgument("--timeout and --read-timeout: give one");
    log(LogLevel::warning, "--timeout is now --read-timeout; the old name will go");
    options.http().read_timeout = milliseconds(*flags.timeout);
  }
  if (flags.read_timeout) options.http().read_timeout = milliseconds(*flags.read_timeout);
  if (!flags.direct_io.empty()) options.file().direct_io = parse_direct_io(flags.direct_io);
  if (flags.cache) options.get<CacheOptions>().directory = *flags.cache;
  if (flags.cache_size) {
    options.get<CacheOptions>().max_size = parse_byte_size(*flags.cache_size, "--cache-size");
  }
  if (flags.cache_mode) options.get<CacheOptions>().mode = parse_cache_mode(*flags.cache_mode);
  if (flags.cache_min_free) {
    options.get<CacheOptions>().min_free =
        parse_cache_floor(*flags.cache_min_free, "--cache-min-free");
  }
  // A cache flag without a cache would quietly read the source, which `offline` promises not to.
  const bool has_cache = flags.cache || tensorstream::detail::environment_setting("CACHE_DIR");
  const bool mode_needs_cache = flags.cache_mode && *flags.cache_mode != "off";
  if (!has_cache && (mode_needs_cache || flags.cache_size || flags.cache_min_free)) {
    throw InvalidArgument(std::string(mode_needs_cache ? "--cache-mode " + *flags.cache_mode
                                      : flags.cache_size ? "--cache-size"
                                                         : "--cache-min-free") +
                          " needs a cache: --cache DIR, or TENSORSTREAM_CACHE_DIR");
  }
  return options;
}

void add_source_read_flags(CLI::App& command, SourceReadFlags& flags,
                           const std::string& memory_help) {
  command.add_option("--chunk-size", flags.chunk_size,
                     "Bytes per range read of SRC, in KiB/MiB/GiB or KB/MB/GB (a bare 8M is "
                     "refused as ambiguous); default: TENSORSTREAM_CHUNK_SIZE, else 16MiB (64MiB "
                     "for az://)");
  command.add_option("--concurrency", flags.concurrency, "Range reads of SRC in flight")
      ->capture_default_str()
      ->check(whole_number_up_to(tensorstream::detail::max_concurrency_limit));
  command.add_option("--memory-limit", flags.memory_limit, memory_help)->capture_default_str();
}

StreamerOptions apply_source_read_flags(const SourceReadFlags& flags, const StoreFlags& store,
                                        StreamerOptions options) {
  if (flags.chunk_size) options.chunk_size = parse_chunk_size(*flags.chunk_size);
  options.max_concurrency = flags.concurrency;
  options.memory_limit = parse_positive_size(flags.memory_limit, "--memory-limit");
  options.store = apply_store_flags(store, options.store);
  return options;
}

}  // namespace tensorstream::cli
