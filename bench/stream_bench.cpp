// Streaming throughput, each next to its ceiling measured in the same run on the same machine:
//   http://  from a loopback nginx, over a grid of chunk size × concurrency, against parallel
//            `curl -o /dev/null` range GETs of the same file with the same concurrency;
//   file://  from the page cache (io_uring and pread), against `dd bs=16M` to /dev/null;
//   s3://    from a loopback s3rver, against parallel `curl` range GETs from the same s3rver,
//            and end to end against downloading the checkpoint first (`aws s3 cp` when the AWS
//            CLI is installed, else curl) and then loading the files.
// At the end it prints each configuration's ratio to its ceiling.
//
// The checkpoint is generated once per run: TENSORSTREAM_BENCH_PRESET (default llama-7b-4layers,
// about 2.1 GB) into a temporary directory.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/nginx_server.hpp"
#include "support/s3rver_server.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace {

using namespace tensorstream;
using Clock = std::chrono::steady_clock;

struct Environment {
  testing::TempDir dir;
  std::filesystem::path file;
  std::uint64_t file_size = 0;
  std::unique_ptr<testing::NginxServer> nginx;

  Environment() {
    const char* preset = std::getenv("TENSORSTREAM_BENCH_PRESET");
    generate_synthetic_model(dir.path(), {.preset = preset ? preset : "llama-7b-4layers"});
    file = dir.path() / "model.safetensors";
    file_size = std::filesystem::file_size(file);
    nginx = std::make_unique<testing::NginxServer>(testing::NginxServer::Options{.root = dir.path()});
  }

  std::string http_url() const { return nginx->base_url() + "/model.safetensors"; }
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

// nullptr, with the benchmark skipped, where s3rver cannot run.
S3Environment* s3_environment(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) {
    state.SkipWithError(why->c_str());
    return nullptr;
  }
  static S3Environment instance;
  return &instance;
}

// Best GB/s of each configuration and of each ceiling, for the ratios printed at the end.
struct Results {
  std::map<std::string, double> rates;          // by configuration
  std::multimap<std::string, std::string> ceilings;  // configuration -> what it is held against
};

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
    RawStreamer streamer(url, options);
    while (auto tensor = streamer.next_blocking()) benchmark::DoNotOptimize(tensor->data.get());
    const auto stats = streamer.stats();
    bytes = stats.bytes;
    record(state, key, bytes, std::chrono::duration<double>(Clock::now() - start).count());
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

// `parts` curl processes, each GETting one contiguous range of `url` to /dev/null.
void curl_ranges(benchmark::State& state, const std::string& key, const std::string& url,
                 std::uint64_t parts) {
  const auto& env = environment();
  const auto curl = testing::find_program("curl");
  if (!curl) {
    state.SkipWithError("curl is not installed");
    return;
  }
  for (auto _ : state) {
    std::vector<std::unique_ptr<testing::ChildProcess>> clients;
    const auto start = Clock::now();
    for (std::uint64_t i = 0; i < parts; ++i) {
      const std::uint64_t begin = env.file_size * i / parts;
      const std::uint64_t end = env.file_size * (i + 1) / parts - 1;
      clients.push_back(std::make_unique<testing::ChildProcess>(
          std::vector<std::string>{curl->string(), "-s", "-o", "/dev/null", "-r",
                                   std::to_string(begin) + "-" + std::to_string(end), url},
          "/dev/null"));
    }
    for (auto& client : clients) client->wait();
    record(state, key, env.file_size, std::chrono::duration<double>(Clock::now() - start).count());
  }
  finish(state, key, env.file_size);
}

void BM_CurlCeiling(benchmark::State& state) {
  curl_ranges(state, curl_name(state.range(0)), environment().http_url(),
              static_cast<std::uint64_t>(state.range(0)));
}

// s3rver allows anonymous reads, so curl needs no signature.
void BM_S3CurlCeiling(benchmark::State& state) {
  if (auto* s3 = s3_environment(state)) {
    curl_ranges(state, "s3rver " + curl_name(state.range(0)), s3->object_url(),
                static_cast<std::uint64_t>(state.range(0)));
  }
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

void BM_FileStream(benchmark::State& state) {
  StreamerOptions options;
  options.store.file.use_io_uring = state.range(0) != 0;
  stream(state, options.store.file.use_io_uring ? "file io_uring" : "file pread",
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

constexpr int iterations = 3;

BENCHMARK(BM_CurlCeiling)->Arg(8)->Arg(32)->Arg(64)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HttpStream)
    ->ArgNames({"chunk_MiB", "concurrency"})
    ->ArgsProduct({{4, 16, 64}, {8, 32, 64}})
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
BENCHMARK(BM_S3DownloadThenLoad)->UseManualTime()->Iterations(iterations)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DdCeiling)->UseManualTime()->Iterations(iterations)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileStream)->ArgName("io_uring")->Arg(1)->Arg(0)->UseManualTime()
    ->Iterations(iterations)->Unit(benchmark::kMillisecond);

void print_ratios() {
  const auto& r = results();
  std::printf("\nRatios to the ceiling measured in this run (best of %d iterations each):\n",
              iterations);
  for (const auto& [name, ceiling] : r.ceilings) {
    const double rate = r.rates.at(name);
    const auto found = r.rates.find(ceiling);
    if (found == r.rates.end() || found->second <= 0) continue;
    std::printf("  %-58s %6.2f GB/s  vs %-10s %6.2f GB/s  = %5.1f %%\n", name.c_str(), rate,
                ceiling.c_str(), found->second, 100 * rate / found->second);
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
