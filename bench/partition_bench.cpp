// `tensorstream partition` from a loopback s3rver back to it, each number next to its ceiling
// measured in the same run on the same machine:
//   partition        the CLI cutting the checkpoint for every TP size, bucket to bucket, with its
//                    peak RSS next to its --memory-limit;
//   aws s3 cp        uploading the finished tree from local disk with `aws s3 cp --recursive`:
//                    the upload ceiling for the same bytes;
//   download, cut, upload
//                    what users do without us: `aws s3 cp` the checkpoint down, partition it on
//                    local disk, `aws s3 cp` the tree up;
//   TRAW vs safetensors
//                    streaming TP1's TRAW shard against streaming the same bytes as the source's
//                    safetensors file, both from s3rver.
// Rates are of the bytes written (every rank of every size), so the three runs compare directly.
//
// Environment:
//   TENSORSTREAM_BENCH_PRESET   checkpoint preset (default llama-7b-4layers, about 2.1 GB)
//   TENSORSTREAM_BENCH_TP       sizes to write (default 1,2,4,8)
//   TENSORSTREAM_BENCH_MEMORY   --memory-limit of the partition (default 512MiB)
// Needs the AWS CLI for the ceilings, which are skipped without it.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "support/child_process.hpp"
#include "support/s3rver_server.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

extern char** environ;

namespace {

using namespace tensorstream;
using Clock = std::chrono::steady_clock;

using bench::environment_or;
using bench::seconds_since;

// A finished child: its output and peak resident memory.
struct Measured {
  double seconds = 0;
  std::uint64_t max_rss = 0;  // bytes
  std::string out;
};

// Runs `argv` to completion with stdout in a file, measuring the child alone (wait4).
Measured run_measured(const std::vector<std::string>& argv) {
  testing::TempDir dir;
  const auto out = dir.path() / "stdout";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const auto start = Clock::now();
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + argv[0]);
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  Measured measured{seconds_since(start), static_cast<std::uint64_t>(usage.ru_maxrss) * 1024,
                    testing::read_text_file(out)};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(argv[0] + " " + argv[1] + " failed: " + measured.out);
  }
  return measured;
}

std::uint64_t tree_bytes(const std::filesystem::path& root) {
  std::uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".bin") bytes += entry.file_size();
  }
  return bytes;
}

struct Environment {
  testing::TempDir dir;
  std::unique_ptr<testing::S3rverServer> s3rver;
  std::string sizes = environment_or("TENSORSTREAM_BENCH_TP", "1,2,4,8");
  std::string memory_limit = environment_or("TENSORSTREAM_BENCH_MEMORY", "512MiB");
  std::optional<std::filesystem::path> aws = testing::find_program("aws");
  std::uint64_t model_bytes = 0;
  std::uint64_t written = 0;  // TRAW bytes of one partition, from the first run
  int runs = 0;

  Environment() {
    generate_synthetic_model(dir.path() / "model",
                             {.preset = environment_or("TENSORSTREAM_BENCH_PRESET",
                                                       "llama-7b-4layers")});
    model_bytes = std::filesystem::file_size(dir.path() / "model" / "model.safetensors");
    s3rver = std::make_unique<testing::S3rverServer>(std::vector<std::string>{"bench"});
    s3rver->put_directory("bench", "hf/llama/", dir.path() / "model");
    setenv("AWS_ACCESS_KEY_ID", testing::S3rverServer::access_key_id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", testing::S3rverServer::secret_access_key, 1);
    setenv("AWS_ENDPOINT_URL", s3rver->endpoint().c_str(), 1);
    setenv("AWS_REGION", "us-east-1", 1);
  }

  std::vector<std::string> partition(const std::string& source, const std::string& destination) {
    return {TENSORSTREAM_CLI_PATH, "partition", source, destination, "--tp", sizes,
            "--memory-limit", memory_limit, "--overwrite"};
  }

  std::vector<std::string> aws_cp(const std::string& from, const std::string& to) const {
    // This AWS CLI predates AWS_ENDPOINT_URL.
    return {aws->string(), "s3", "cp", "--recursive", "--quiet", "--endpoint-url",
            s3rver->endpoint(), from, to};
  }
};

Environment& environment() {
  static Environment instance;
  return instance;
}

// MB/s of each run, by name, for the ratios printed at the end.
std::map<std::string, double>& rates() {
  static std::map<std::string, double> instance;
  return instance;
}
std::uint64_t partition_rss = 0;

void record(benchmark::State& state, const std::string& name, std::uint64_t bytes,
            double seconds) {
  state.SetIterationTime(seconds);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  const double rate = static_cast<double>(bytes) / seconds / 1e6;
  state.counters["MB/s"] = rate;
  rates()[name] = std::max(rates()[name], rate);
}

void BM_Partition(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) return state.SkipWithError(why->c_str());
  auto& env = environment();
  for (auto _ : state) {
    const auto measured = run_measured(env.partition("s3://bench/hf/llama/", "s3://bench/raw/"));
    // The first run's tree, kept on local disk, is what the ceiling uploads.
    if (env.written == 0) {
      run_measured(env.partition("s3://bench/hf/llama/", (env.dir.path() / "tree").string()));
      env.written = tree_bytes(env.dir.path() / "tree");
    }
    record(state, "partition", env.written, measured.seconds);
    partition_rss = std::max(partition_rss, measured.max_rss);
    state.counters["peak_RSS_MiB"] = static_cast<double>(partition_rss) / (1 << 20);
  }
}

void BM_AwsUploadCeiling(benchmark::State& state) {
  auto& env = environment();
  if (!env.aws) return state.SkipWithError("the AWS CLI is not installed");
  for (auto _ : state) {
    const auto measured =
        run_measured(env.aws_cp((env.dir.path() / "tree").string(), "s3://bench/ceiling/"));
    record(state, "aws s3 cp of the tree", env.written, measured.seconds);
  }
}

void BM_DownloadPartitionUpload(benchmark::State& state) {
  auto& env = environment();
  if (!env.aws) return state.SkipWithError("the AWS CLI is not installed");
  for (auto _ : state) {
    testing::TempDir work;
    const auto start = Clock::now();
    run_measured(env.aws_cp("s3://bench/hf/llama/", (work.path() / "model").string()));
    run_measured(env.partition((work.path() / "model").string(), (work.path() / "tree").string()));
    run_measured(env.aws_cp((work.path() / "tree").string(), "s3://bench/ceiling/"));
    record(state, "download, partition, upload", env.written, seconds_since(start));
  }
}

void stream(benchmark::State& state, const std::string& name, const std::string& url) {
  for (auto _ : state) {
    const auto start = Clock::now();
    RawStreamer streamer(url, StreamerOptions{});
    std::uint64_t bytes = 0;
    while (auto tensor = streamer.next_blocking()) bytes += tensor->info.byte_size();
    record(state, name, bytes, seconds_since(start));
  }
}

void BM_StreamTraw(benchmark::State& state) {
  stream(state, "stream TRAW TP1", "s3://bench/raw/TP1/shard0/");
}

void BM_StreamSafetensors(benchmark::State& state) {
  stream(state, "stream safetensors", "s3://bench/hf/llama/model.safetensors");
}

BENCHMARK(BM_Partition)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_AwsUploadCeiling)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_DownloadPartitionUpload)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
// Alternating, so that drift of the machine hits both.
BENCHMARK(BM_StreamTraw)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamSafetensors)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamTraw)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamSafetensors)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

void print_ratio(const char* what, const std::string& name, const std::string& ceiling) {
  const auto& r = rates();
  if (!r.contains(name) || !r.contains(ceiling) || r.at(ceiling) <= 0) return;
  std::printf("  %-44s %8.1f MB/s vs %-30s %8.1f MB/s = %5.1f %%\n", what, r.at(name),
              ceiling.c_str(), r.at(ceiling), 100 * r.at(name) / r.at(ceiling));
}

void print_summary() {
  const auto& env = environment();
  std::printf("\nPartition of %.2f GB for TP %s: %.2f GB written, bucket to bucket\n",
              static_cast<double>(env.model_bytes) / 1e9, env.sizes.c_str(),
              static_cast<double>(env.written) / 1e9);
  print_ratio("partition", "partition", "aws s3 cp of the tree");
  print_ratio("partition", "partition", "download, partition, upload");
  print_ratio("streaming TRAW (best)", "stream TRAW TP1", "stream safetensors");
  std::printf("  peak RSS of the partition: %.0f MiB with --memory-limit %s\n",
              static_cast<double>(partition_rss) / (1 << 20), env.memory_limit.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary();
}
