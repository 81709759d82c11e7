// Streaming throughput, each next to its ceiling measured in the same run on the same machine:
//   http://  from a loopback nginx, over a grid of chunk size × concurrency, against parallel
//            `curl -o /dev/null` range GETs of the same file with the same concurrency;
//   https:// the same over TLS 1.3 (a test CA), with the CPU seconds each side spends per GB
//            (curl's process start-up, measured with one-byte GETs, subtracted), from nginx and
//            from a second s3rver serving https;
//   file://  from the page cache (io_uring and pread), against `dd bs=16M` to /dev/null;
//   s3://    from a loopback s3rver, against parallel `curl` range GETs from the same s3rver,
//            and end to end against downloading the checkpoint first (`aws s3 cp` when the AWS
//            CLI is installed, else curl) and then loading the files;
//   cache    a load from a full local cache against file:// of the plain copy, page cache warm
//            and cold, and a load that fills an empty cache against the same load without (from
//            the loopback at full speed and paced to about 10 GbE), beside curl writing to tmpfs
//            against curl to /dev/null;
//   az://    from a loopback Azurite, against parallel `curl` range GETs from the same Azurite,
//            both reading with one container SAS token.
// At the end it prints each configuration's ratio to its ceiling, in GB/s and in CPU per GB.
//
// The checkpoint is generated once per run: TENSORSTREAM_BENCH_PRESET (default llama-7b-4layers,
// about 2.1 GB) into a temporary directory.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/certificates.hpp"
#include "support/child_process.hpp"
#include "support/nginx_server.hpp"
#include "support/azurite_server.hpp"
#include "support/files.hpp"
#include "support/hub_fixture_server.hpp"
#include "support/s3rver_server.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/azure/default_credentials.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/cache_options.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace {

using namespace tensorstream;
using Clock = std::chrono::steady_clock;

struct Environment {
  testing::TempDir dir;
  std::filesystem::path file;
  std::uint64_t file_size = 0;
  std::unique_ptr<testing::NginxServer> nginx;
  testing::TempDir tls_dir;
  testing::Certificates certificates;
  std::unique_ptr<testing::NginxServer> tls_nginx;

  Environment() {
    const char* preset = std::getenv("TENSORSTREAM_BENCH_PRESET");
    generate_synthetic_model(dir.path(), {.preset = preset ? preset : "llama-7b-4layers"});
    file = dir.path() / "model.safetensors";
    file_size = std::filesystem::file_size(file);
    // /paced/ sends each response at 40 MB/s: 32 ranges at once, about a 10 GbE link.
    nginx = std::make_unique<testing::NginxServer>(testing::NginxServer::Options{
        .root = dir.path(),
        .extra_config =
            "location /paced/ { alias " + dir.path().string() + "/; limit_rate 40m; }"});
    certificates = testing::Certificates::generate(tls_dir.path());
    tls_nginx = std::make_unique<testing::NginxServer>(
        testing::NginxServer::Options{.root = dir.path(),
                                      .certificate = certificates.server_certificate,
                                      .key = certificates.server_key});
  }

  std::string http_url() const { return nginx->base_url() + "/model.safetensors"; }
  std::string paced_http_url() const { return nginx->base_url() + "/paced/model.safetensors"; }
  std::string https_url() const { return tls_nginx->base_url() + "/model.safetensors"; }
};

Environment& environment() {
  static Environment instance;
  return instance;
}

// The same checkpoint in s3rver, uploaded the first time an s3:// benchmark runs.
struct S3Environment {
  std::unique_ptr<testing::S3rverServer> s3rver;

  S3Environment() {
    s3rver = std::make_unique<testing::S3rverServer>(std::vector<std::string>{"bench"});
    s3rver->put("bench", "model/model.safetensors", environment().file);
    setenv("AWS_ACCESS_KEY_ID", testing::S3rverServer::access_key_id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", testing::S3rverServer::secret_access_key, 1);
    setenv("AWS_ENDPOINT_URL", s3rver->endpoint().c_str(), 1);
    setenv("AWS_REGION", "us-east-1", 1);
  }

  std::string object_url() const { return s3rver->endpoint() + "/bench/model/model.safetensors"; }
};

// The same checkpoint in a second s3rver that serves https with the test CA's certificate.
struct S3TlsEnvironment {
  std::unique_ptr<testing::S3rverServer> s3rver;

  S3TlsEnvironment() {
    const auto& certificates = environment().certificates;
    s3rver = std::make_unique<testing::S3rverServer>(
        std::vector<std::string>{"bench"},
        testing::S3rverServer::Tls{certificates.server_certificate, certificates.server_key});
    s3rver->put("bench", "model/model.safetensors", environment().file);
    setenv("AWS_ACCESS_KEY_ID", testing::S3rverServer::access_key_id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", testing::S3rverServer::secret_access_key, 1);
  }

  std::string object_url() const { return s3rver->endpoint() + "/bench/model/model.safetensors"; }
};

// nullptr, with the benchmark skipped, where s3rver cannot run.
S3Environment* s3_environment(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) {
    state.SkipWithError(why->c_str());
    return nullptr;
  }
  static S3Environment instance;
  return &instance;
}

// The same checkpoint in Azurite, uploaded through the Azure SDK for Python the first time an
// az:// benchmark runs, and a SAS token that reads it.
struct AzureEnvironment {
  testing::AzuriteServer azurite;
  std::string sas;

  AzureEnvironment() {
    azurite.create_container("bench");
    azurite.put_blob("bench", "model/model.safetensors", environment().file);
    sas = azurite.container_sas("bench", "rl", std::chrono::hours(24));
  }

  std::string blob_url() const {
    return azurite.blob_endpoint() + "/bench/model/model.safetensors?" + sas;
  }
};

// nullptr, with the benchmark skipped, where Azurite cannot run.
AzureEnvironment* azure_environment(benchmark::State& state) {
  if (auto why = testing::AzuriteServer::unavailable()) {
    state.SkipWithError(why->c_str());
    return nullptr;
  }
  static AzureEnvironment instance;
  return &instance;
}

// The checkpoint as the only file of the Hub fixture's repository bench/model, whose CDN serves
// it; hf:// reads it from the Hub and nowhere else (no HF_* of the machine, no cache).
struct HubEnvironment {
  testing::HubFixtureServer hub{{}};
  testing::ScopedEnvironment variables{{"HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                        "HF_TOKEN_PATH", "HF_HOME", "HF_HUB_CACHE",
                                        "HF_HUB_OFFLINE"}};

  HubEnvironment() {
    hub.commit("bench/model", {{"model.safetensors", testing::read_file(environment().file)}});
    variables.set("HF_ENDPOINT", hub.endpoint());
  }
};

HubEnvironment& hub_environment() {
  static HubEnvironment instance;
  return instance;
}

// Best GB/s of each configuration and of each ceiling, and the least CPU seconds per GB where
// measured, for the ratios printed at the end.
struct Results {
  std::map<std::string, double> rates;          // by configuration
  std::map<std::string, double> cpu_per_gb;     // by configuration
  std::multimap<std::string, std::string> ceilings;  // configuration -> what it is held against
};

// User plus system CPU seconds of `who` (RUSAGE_SELF, or RUSAGE_CHILDREN for reaped children).
double cpu_seconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Results& results() {
  static Results instance;
  return instance;
}

void record(benchmark::State& state, const std::string& key, std::uint64_t bytes,
            double seconds) {
  state.SetIterationTime(seconds);
  auto& best = results().rates[key];
  best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);
}

void record_cpu(benchmark::State& state, const std::string& key, std::uint64_t bytes,
                double cpu) {
  const double per_gb = cpu / (static_cast<double>(bytes) / 1e9);
  auto [best, inserted] = results().cpu_per_gb.emplace(key, per_gb);
  if (!inserted) best->second = std::min(best->second, per_gb);
  state.counters["cpu_s_per_GB"] = best->second;
}

void finish(benchmark::State& state, const std::string& key, std::uint64_t bytes,
            const std::string& ceiling = "") {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.counters["GB/s"] = results().rates[key];
  if (!ceiling.empty()) results().ceilings.emplace(key, ceiling);
}

std::string curl_name(std::int64_t concurrency) {
  return "curl x" + std::to_string(concurrency);
}

void stream(benchmark::State& state, const std::string& key, const std::string& url,
            StreamerOptions options, const std::string& ceiling) {
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    const double cpu_start = cpu_seconds(RUSAGE_SELF);
    StreamStats stats;
    {
      RawStreamer streamer(url, options);
      while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
      stats = streamer.stats();
    }
    bytes = stats.bytes;
    record(state, key, bytes, std::chrono::duration<double>(Clock::now() - start).count());
    record_cpu(state, key, bytes, cpu_seconds(RUSAGE_SELF) - cpu_start);
    state.counters["first_tensor_ms"] = stats.first_tensor_seconds * 1e3;
    state.counters["peak_MiB"] = static_cast<double>(stats.peak_memory) / (1 << 20);
  }
  finish(state, key, bytes, ceiling);
}

void BM_HttpStream(benchmark::State& state) {
  StreamerOptions options;
  options.chunk_size = static_cast<std::uint64_t>(state.range(0)) << 20;
  options.max_concurrency = static_cast<std::size_t>(state.range(1));
  const std::string key = "http chunk " + std::to_string(state.range(0)) + " MiB, concurrency " +
                          std::to_string(state.range(1));
  stream(state, key, environment().http_url(), options, curl_name(state.range(1)));
}

// A directory, not yet made, on tmpfs (/dev/shm where there is one) for this process's `use`.
std::filesystem::path bench_tmpfs_directory(const std::string& use) {
  const std::filesystem::path shm = "/dev/shm";
  return (std::filesystem::is_directory(shm) ? shm : std::filesystem::temp_directory_path()) /
         ("tensorstream-bench-" + use + "-" + std::to_string(::getpid()));
}

// Runs `parts` curl processes at once, the i-th GETting `range(i)` of `url` to /dev/null, and
// returns the CPU seconds they used.
template <class Range>
double run_curls(const std::filesystem::path& curl, const std::string& url,
                 const std::vector<std::string>& options, std::uint64_t parts, Range range,
                 const std::filesystem::path& into = {}) {
  const double cpu_start = cpu_seconds(RUSAGE_CHILDREN);
  std::vector<std::unique_ptr<testing::ChildProcess>> clients;
  for (std::uint64_t i = 0; i < parts; ++i) {
    const std::string output = into.empty() ? "/dev/null" : (into / std::to_string(i)).string();
    std::vector<std::string> argv{curl.string(), "-s", "-o", output, "-r", range(i)};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(url);
    clients.push_back(std::make_unique<testing::ChildProcess>(argv, "/dev/null"));
  }
  for (auto& client : clients) client->wait();
  return cpu_seconds(RUSAGE_CHILDREN) - cpu_start;
}

// `parts` curl processes, each GETting one contiguous range of `url` to /dev/null, or to a file
// of its own in a fresh directory on tmpfs when `to_tmpfs` (what writing every byte through costs
// this machine). Their CPU per GB leaves out what the same processes spend on two-byte GETs
// (start-up, TLS handshake; s3rver answers a one-byte range with the whole object).
void curl_ranges(benchmark::State& state, const std::string& key, const std::string& url,
                 std::uint64_t parts, const std::vector<std::string>& options = {},
                 bool to_tmpfs = false) {
  const auto& env = environment();
  const auto curl = testing::find_program("curl");
  if (!curl) {
    state.SkipWithError("curl is not installed");
    return;
  }
  for (auto _ : state) {
    const double start_up =
        run_curls(*curl, url, options, parts, [](std::uint64_t) { return std::string("0-1"); });
    const std::filesystem::path into = to_tmpfs ? bench_tmpfs_directory("curl") : "";
    if (to_tmpfs) std::filesystem::create_directories(into);
    const auto start = Clock::now();
    const double cpu = run_curls(
        *curl, url, options, parts,
        [&](std::uint64_t i) {
          const std::uint64_t begin = env.file_size * i / parts;
          const std::uint64_t end = env.file_size * (i + 1) / parts - 1;
          return std::to_string(begin) + "-" + std::to_string(end);
        },
        into);
    record(state, key, env.file_size, std::chrono::duration<double>(Clock::now() - start).count());
    record_cpu(state, key, env.file_size, std::max(0.0, cpu - start_up));
    if (to_tmpfs) std::filesystem::remove_all(into);
  }
  finish(state, key, env.file_size, to_tmpfs ? curl_name(static_cast<std::int64_t>(parts)) : "");
}

void BM_CurlCeiling(benchmark::State& state) {
  curl_ranges(state, curl_name(state.range(0)), environment().http_url(),
              static_cast<std::uint64_t>(state.range(0)));
}

// The ceiling of a load that keeps every byte: curl writing its ranges to tmpfs.
void BM_CurlToTmpfsCeiling(benchmark::State& state) {
  curl_ranges(state, curl_name(state.range(0)) + " to tmpfs", environment().http_url(),
              static_cast<std::uint64_t>(state.range(0)), {}, true);
}

void BM_HttpsCurlCeiling(benchmark::State& state) {
  curl_ranges(state, "https " + curl_name(state.range(0)), environment().https_url(),
              static_cast<std::uint64_t>(state.range(0)),
              {"--cacert", environment().certificates.ca.string()});
}

void BM_HttpsStream(benchmark::State& state) {
  StreamerOptions options;
  options.chunk_size = static_cast<std::uint64_t>(state.range(0)) << 20;
  options.max_concurrency = static_cast<std::size_t>(state.range(1));
  options.store.http().ca_file = environment().certificates.ca.string();
  const std::string key = "https chunk " + std::to_string(state.range(0)) + " MiB, concurrency " +
                          std::to_string(state.range(1));
  stream(state, key, environment().https_url(), options, "https " + curl_name(state.range(1)));
}

// s3rver allows anonymous reads, so curl needs no signature.
void BM_S3CurlCeiling(benchmark::State& state) {
  if (auto* s3 = s3_environment(state)) {
    curl_ranges(state, "s3rver " + curl_name(state.range(0)), s3->object_url(),
                static_cast<std::uint64_t>(state.range(0)));
  }
}

S3TlsEnvironment* s3_tls_environment(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) {
    state.SkipWithError(why->c_str());
    return nullptr;
  }
  static S3TlsEnvironment instance;
  return &instance;
}

void BM_S3TlsCurlCeiling(benchmark::State& state) {
  if (auto* s3 = s3_tls_environment(state)) {
    curl_ranges(state, "s3rver https " + curl_name(state.range(0)), s3->object_url(),
                static_cast<std::uint64_t>(state.range(0)),
                {"--cacert", environment().certificates.ca.string()});
  }
}

void BM_S3TlsStream(benchmark::State& state) {
  auto* s3 = s3_tls_environment(state);
  if (s3 == nullptr) return;
  StreamerOptions options;
  options.chunk_size = 16u << 20;
  options.max_concurrency = static_cast<std::size_t>(state.range(0));
  options.store.s3().endpoint = s3->s3rver->endpoint();
  options.store.s3().region = "us-east-1";
  options.store.http().ca_file = environment().certificates.ca.string();
  stream(state, "s3 https chunk 16 MiB, concurrency " + std::to_string(state.range(0)),
         "s3://bench/model/", options, "s3rver https " + curl_name(state.range(0)));
}

void BM_S3Stream(benchmark::State& state) {
  if (s3_environment(state) == nullptr) return;
  StreamerOptions options;
  options.chunk_size = static_cast<std::uint64_t>(state.range(0)) << 20;
  options.max_concurrency = static_cast<std::size_t>(state.range(1));
  const std::string key = "s3 chunk " + std::to_string(state.range(0)) + " MiB, concurrency " +
                          std::to_string(state.range(1));
  stream(state, key, "s3://bench/model/", options, "s3rver " + curl_name(state.range(1)));
}

// What users do without a streaming loader: download the checkpoint to disk (the AWS CLI when it
// is installed, else curl), then load the files.
void BM_S3DownloadThenLoad(benchmark::State& state) {
  auto* s3 = s3_environment(state);
  if (s3 == nullptr) return;
  const auto aws = testing::find_program("aws");
  const std::string key = aws ? "aws s3 cp, then load" : "curl download, then load";
  for (auto _ : state) {
    testing::TempDir target;
    const auto start = Clock::now();
    if (aws) {
      // This AWS CLI predates AWS_ENDPOINT_URL.
      testing::run_command({aws->string(), "s3", "cp", "--recursive", "--quiet", "--endpoint-url",
                            s3->s3rver->endpoint(), "s3://bench/model/", target.path().string()},
                           "/dev/null");
    } else {
      testing::run_command({"curl", "-sSf", "-o", (target.path() / "model.safetensors").string(),
                            s3->object_url()},
                           "/dev/null");
    }
    RawStreamer streamer(target.path().string() + "/", StreamerOptions{});
    while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
    record(state, key, environment().file_size,
           std::chrono::duration<double>(Clock::now() - start).count());
  }
  finish(state, key, environment().file_size);
  results().ceilings.emplace("s3 chunk 16 MiB, concurrency 32", key);
}

void BM_AzureCurlCeiling(benchmark::State& state) {
  if (auto* azure = azure_environment(state)) {
    curl_ranges(state, "Azurite " + curl_name(state.range(0)), azure->blob_url(),
                static_cast<std::uint64_t>(state.range(0)));
  }
}

void BM_AzureStream(benchmark::State& state) {
  auto* azure = azure_environment(state);
  if (azure == nullptr) return;
  StreamerOptions options;
  // Chunk 0: left to the defaults, which the store raises to its preferred read size.
  if (state.range(0) > 0) options.chunk_size = static_cast<std::uint64_t>(state.range(0)) << 20;
  options.max_concurrency = static_cast<std::size_t>(state.range(1));
  options.store.azure().endpoint = azure->azurite.blob_endpoint();
  options.store.azure().credentials =
      azure::fixed_credentials({azure::Credentials::Kind::sas, azure->sas}, "SAS");
  const std::string chunk =
      state.range(0) > 0 ? "chunk " + std::to_string(state.range(0)) + " MiB" : "default chunk";
  const std::string key = "az " + chunk + ", concurrency " + std::to_string(state.range(1));
  stream(state, key, "az://bench/model/", options, "Azurite " + curl_name(state.range(1)));
}

// The ceiling of hf://: the same file streamed from the CDN by its signed URL, no Hub involved.
void BM_HfCdnDirectStream(benchmark::State& state) {
  auto& hub = hub_environment();
  stream(state, "http from the Hub's CDN", hub.hub.cdn_url("bench/model", "main",
                                                           "model.safetensors"),
         StreamerOptions{}, "");
}

// hf:// at the defaults: the revision, the tree, then each range by the redirect to the CDN.
void BM_HfStream(benchmark::State& state) {
  hub_environment();
  StreamerOptions options;
  options.store.hf().read_cache = false;
  stream(state, "hf:// through the Hub", "hf://bench/model/model.safetensors", options,
         "http from the Hub's CDN");
}

void BM_FileStream(benchmark::State& state) {
  StreamerOptions options;
  options.store.file().use_io_uring = state.range(0) != 0;
  stream(state, options.store.file().use_io_uring ? "file io_uring" : "file pread",
         "file://" + environment().file.string(), options, "dd bs=16M");
}

void BM_DdCeiling(benchmark::State& state) {
  const auto& env = environment();
  for (auto _ : state) {
    const auto start = Clock::now();
    testing::run_command({"dd", "if=" + env.file.string(), "of=/dev/null", "bs=16M"}, "/dev/null");
    record(state, "dd bs=16M", env.file_size,
           std::chrono::duration<double>(Clock::now() - start).count());
  }
  finish(state, "dd bs=16M", env.file_size);
}

// Evicts `file` from the page cache (its pages written back first), for cold reads.
void drop_from_page_cache(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// The data files of a cache directory's entries.
std::vector<std::filesystem::path> cache_data_files(const std::filesystem::path& cache) {
  std::vector<std::filesystem::path> files;
  for (const auto& file : std::filesystem::recursive_directory_iterator(cache)) {
    if (file.path().filename() == "data") files.push_back(file.path());
  }
  return files;
}

// file:// of the plain checkpoint, its pages evicted first when state.range(0) is 0: the
// ceiling of a load from a full cache on the same disk.
void BM_FileStreamPageCache(benchmark::State& state) {
  const bool warm = state.range(0) != 0;
  const std::string key = warm ? "file, page cache warm" : "file, page cache cold";
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    if (!warm) drop_from_page_cache(environment().file);
    const auto start = Clock::now();
    RawStreamer streamer("file://" + environment().file.string(), StreamerOptions{});
    while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
    bytes = streamer.stats().bytes;
    record(state, key, bytes, std::chrono::duration<double>(Clock::now() - start).count());
  }
  finish(state, key, bytes);
}

// http:// from nginx through a cache that holds the whole checkpoint (filled once, before the
// first iteration, in the benchmark's temporary directory, the plain copy's disk): one HEAD,
// then every byte from the cache, checked.
void BM_CacheWarmStream(benchmark::State& state) {
  static testing::TempDir cache;
  const bool warm = state.range(0) != 0;
  StreamerOptions options;
  options.store.get<CacheOptions>().directory = cache.path().string();
  if (cache_data_files(cache.path()).empty()) {
    RawStreamer filling(environment().http_url(), options);
    while (filling.next_blocking()) {
    }
  }
  const std::string key = warm ? "cache full, page cache warm" : "cache full, page cache cold";
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    if (!warm) {
      for (const auto& file : cache_data_files(cache.path())) drop_from_page_cache(file);
    }
    const auto start = Clock::now();
    RawStreamer streamer(environment().http_url(), options);
    while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
    const StreamStats stats = streamer.stats();
    if (stats.source_bytes != 0) state.SkipWithError("the full cache fetched from the source");
    bytes = stats.bytes;
    record(state, key, bytes, std::chrono::duration<double>(Clock::now() - start).count());
  }
  finish(state, key, bytes, warm ? "file, page cache warm" : "file, page cache cold");
}

// http:// from nginx at the defaults, without a cache and filling an empty one on tmpfs
// (/dev/shm where there is one) each iteration: what keeping the bytes costs a cold load. Unpaced,
// the loopback outruns what two cores can also write; paced (state.range(1)), the network is
// the limit, as off this machine.
void BM_CacheFillStream(benchmark::State& state) {
  const bool fill = state.range(0) != 0;
  const bool paced = state.range(1) != 0;
  const std::string source = paced ? "http paced, 32 x 40 MB/s" : "http";
  const std::string key = source + (fill ? ", filling a cache" : ", no cache");
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    const std::filesystem::path cache = bench_tmpfs_directory("cache");
    std::filesystem::remove_all(cache);
    StreamerOptions options;
    if (fill) options.store.get<CacheOptions>().directory = cache.string();
    const auto start = Clock::now();
    {
      RawStreamer streamer(paced ? environment().paced_http_url() : environment().http_url(),
                           options);
      while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
      bytes = streamer.stats().bytes;
      record(state, key, bytes, std::chrono::duration<double>(Clock::now() - start).count());
    }
    // The cache's writes that outlast the stream, until durable and recorded.
    if (fill) {
      record(state, key + ", until recorded", bytes,
             std::chrono::duration<double>(Clock::now() - start).count());
    }
    std::filesystem::remove_all(cache);
  }
  if (fill) finish(state, key + ", until recorded", bytes, source + ", no cache");
  finish(state, key, bytes, fill ? source + ", no cache" : "");
}

constexpr int iterations = 3;

BENCHMARK(BM_CurlCeiling)->Arg(8)->Arg(32)->Arg(64)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HttpStream)
    ->ArgNames({"chunk_MiB", "concurrency"})
    ->ArgsProduct({{4, 16, 64}, {8, 32, 64}})
    ->UseManualTime()
    ->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HttpsCurlCeiling)->Arg(8)->Arg(32)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HttpsStream)
    ->ArgNames({"chunk_MiB", "concurrency"})
    ->ArgsProduct({{16}, {8, 32}})
    ->UseManualTime()
    ->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_S3CurlCeiling)->Arg(8)->Arg(32)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_S3Stream)
    ->ArgNames({"chunk_MiB", "concurrency"})
    ->ArgsProduct({{16, 64}, {8, 32}})
    ->UseManualTime()
    ->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_S3TlsCurlCeiling)->Arg(8)->Arg(32)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_S3TlsStream)->ArgName("concurrency")->Arg(8)->Arg(32)->UseManualTime()
    ->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_S3DownloadThenLoad)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AzureCurlCeiling)->Arg(8)->Arg(32)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AzureStream)
    ->ArgNames({"chunk_MiB", "concurrency"})
    ->ArgsProduct({{0, 16, 64}, {8, 32}})
    ->UseManualTime()
    ->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
// The ceiling runs before and after, so that neither side gains from running second.
BENCHMARK(BM_HfCdnDirectStream)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HfStream)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HfCdnDirectStream)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DdCeiling)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileStream)->ArgName("io_uring")->Arg(1)->Arg(0)->UseManualTime()
    ->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileStreamPageCache)->ArgName("warm")->Arg(1)->Arg(0)->UseManualTime()
    ->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CacheWarmStream)->ArgName("warm")->Arg(1)->Arg(0)->UseManualTime()
    ->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CacheFillStream)->ArgNames({"fill", "paced"})->ArgsProduct({{0, 1}, {0, 1}})
    ->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CurlToTmpfsCeiling)->Arg(32)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);

void print_ratios() {
  const auto& r = results();
  std::printf("\nRatios to the ceiling measured in this run (best of %d iterations each):\n",
              iterations);
  for (const auto& [name, ceiling] : r.ceilings) {
    const double rate = r.rates.at(name);
    const auto found = r.rates.find(ceiling);
    if (found == r.rates.end() || found->second <= 0) continue;
    std::printf("  %-58s %6.2f GB/s  vs %-16s %6.2f GB/s  = %5.1f %%\n", name.c_str(), rate,
                ceiling.c_str(), found->second, 100 * rate / found->second);
  }
  std::printf("\nCPU seconds per GB against the ceiling's (least of %d iterations each):\n",
              iterations);
  for (const auto& [name, ceiling] : r.ceilings) {
    const auto mine = r.cpu_per_gb.find(name);
    const auto theirs = r.cpu_per_gb.find(ceiling);
    if (mine == r.cpu_per_gb.end() || theirs == r.cpu_per_gb.end() || theirs->second <= 0) {
      continue;
    }
    std::printf("  %-58s %6.2f s/GB  vs %-16s %6.2f s/GB  = %5.2fx\n", name.c_str(),
                mine->second, ceiling.c_str(), theirs->second, mine->second / theirs->second);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_ratios();
}
