// `tensorstream serve` loading a checkpoint's tensor-parallel ranks into shared memory (both ranks
// of TP 2 in one server by default), each number next to its ceiling measured in the same run on
// the same machine:
//   serve, s3://     start-to-ready of `serve s3://…/raw/ --tp 2` from a loopback s3rver holding
//                    the TRAW tree `tensorstream partition` wrote, against `tensorstream stream` of
//                    the same bytes: every rank's shard, one process after the other as the server
//                    loads them, their times added;
//   serve, http://   start-to-ready of `serve http://…/model.safetensors --tp 2` from a loopback
//                    nginx (the checkpoint read once and cut for every rank), against `tensorstream
//                    stream` of the same file;
//   attach           the latency of store::attach() (request, reply with the descriptors, mmap of
//                    the regions) from 8 threads attaching rank i % tp concurrently, p50 and p99;
//                    then, untimed, one byte of every page of rank 0's largest weight is read, to
//                    show that the mapping is the server's memory;
//   fresh memory     filling a new memfd of the checkpoint's size with memset: what writing the
//                    weights into memory no process has touched yet costs on this machine, which
//                    the server pays for every byte it serves, while a stream recycles the same
//                    --memory-limit of buffers;
//   peak RSS         of the serve process (wait4 after SIGTERM), against the weights plus the KV
//                    cache plus its --memory-limit (the shared memory it fills counts in its RSS).
// Start-to-ready is from spawning the process until its ready line arrives on the pipe, and a
// stream's time until its summary line arrives, so both include the process's start-up (the CLI
// loads libtorch) but not its exit; each side's own in-process time is compared too. The seed's
// store server loads about 0.28 GB/s per process (../shared/reference/anchors.md).
//
// Environment:
//   TENSORSTREAM_BENCH_PRESET     checkpoint preset (default llama-7b-4layers, about 2.1 GB)
//   TENSORSTREAM_BENCH_TP         tensor-parallel size served (default 2; every rank is served)
//   TENSORSTREAM_BENCH_MEMORY     --memory-limit of serve and stream (default 512MiB)
//   TENSORSTREAM_BENCH_KV_CACHE   --kv-cache-memory of serve, per rank (default 256MiB)
//   TENSORSTREAM_BENCH_ATTACHES   attaches per thread (default 200)
// The s3:// runs need s3rver, the http:// runs nginx; each is skipped without its server, and the
// attach run uses whichever source there is.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <latch>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/byte_size.hpp"
#include "bench_support.hpp"
#include "support/child_process.hpp"
#include "support/nginx_server.hpp"
#include "support/s3rver_server.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/store/attached_rank.hpp"

extern char** environ;

namespace {

using namespace tensorstream;
using Clock = std::chrono::steady_clock;

constexpr double seed_gb_per_s = 0.28;
constexpr int attach_threads = 8;

using bench::environment_or;
using bench::seconds_since;

// The number after `"key":` in a JSON line the CLI printed (its lines are flat enough for this).
double json_number(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\":");
  if (at == std::string::npos) throw std::runtime_error("no " + key + " in " + line);
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

// A CLI process with its stdout on a pipe, read line by line as it comes, so that the moment a
// line arrives is measured without polling; stderr goes to a file, quoted when it fails.
class Cli {
 public:
  explicit Cli(const std::vector<std::string>& argv) : name_(argv.at(1)) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    stdout_ = fds[0];
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, err().c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    start_ = Clock::now();
    const int error = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (error != 0) {
      pid_ = -1;
      throw std::runtime_error("cannot start " + argv[0]);
    }
  }

  ~Cli() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(stdout_);
  }

  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  // The next line of stdout starting with `prefix`, and when it arrived.
  std::string wait_for_line(std::string_view prefix) {
    for (;;) {
      const auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        if (line.starts_with(prefix)) {
          arrived_ = seconds_since(start_);
          return line;
        }
        continue;
      }
      if (!read_some()) {
        throw std::runtime_error(name_ + " ended before printing " + std::string(prefix) + ": " +
                                 testing::read_text_file(err()));
      }
    }
  }

  // Seconds from the start to the line wait_for_line() last returned.
  double arrived() const { return arrived_; }

  // Sends SIGTERM first when `terminate`, reads stdout to its end and reaps the process, which
  // must exit with status 0. Returns its peak RSS in bytes.
  std::uint64_t finish(bool terminate) {
    if (terminate) ::kill(pid_, SIGTERM);
    while (read_some()) buffer_.clear();
    int status = 0;
    rusage usage{};
    ::wait4(pid_, &status, 0, &usage);
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error(name_ + " failed (wait status " + std::to_string(status) +
                               "): " + testing::read_text_file(err()));
    }
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  }

 private:
  std::filesystem::path err() const { return dir_.path() / "stderr"; }

  bool read_some() {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(stdout_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  testing::TempDir dir_;
  std::string name_;
  pid_t pid_ = -1;
  int stdout_ = -1;
  Clock::time_point start_;
  std::string buffer_;
  double arrived_ = 0;
};

// A serve run: start-to-ready measured here, the server's own numbers, its peak RSS.
struct Served {
  double start_to_ready = 0;
  double own_seconds = 0;            // the ready line's: from before loading to ready
  std::uint64_t weight_bytes = 0;    // over all ranks
  std::uint64_t kv_cache_bytes = 0;  // over all ranks
  std::uint64_t max_rss = 0;
};

// A stream run: until its summary line, and the stream's own time.
struct Streamed {
  double seconds = 0;
  double own_seconds = 0;
  std::uint64_t bytes = 0;
};

struct Environment {
  testing::TempDir dir;
  std::unique_ptr<testing::S3rverServer> s3rver;
  std::unique_ptr<testing::NginxServer> nginx;
  int tp = std::stoi(environment_or("TENSORSTREAM_BENCH_TP", "2"));
  std::string memory_limit = environment_or("TENSORSTREAM_BENCH_MEMORY", "512MiB");
  std::string kv_cache_memory = environment_or("TENSORSTREAM_BENCH_KV_CACHE", "256MiB");
  int attaches = std::stoi(environment_or("TENSORSTREAM_BENCH_ATTACHES", "200"));
  std::uint64_t model_bytes = 0;

  Environment() {
    const auto model = dir.path() / "model";
    generate_synthetic_model(
        model, {.preset = environment_or("TENSORSTREAM_BENCH_PRESET", "llama-7b-4layers")});
    model_bytes = std::filesystem::file_size(model / "model.safetensors");
    if (testing::NginxServer::available()) {
      nginx = std::make_unique<testing::NginxServer>(testing::NginxServer::Options{.root = model});
    }
    if (!testing::S3rverServer::unavailable()) {
      s3rver = std::make_unique<testing::S3rverServer>(std::vector<std::string>{"bench"});
      setenv("AWS_ACCESS_KEY_ID", testing::S3rverServer::access_key_id, 1);
      setenv("AWS_SECRET_ACCESS_KEY", testing::S3rverServer::secret_access_key, 1);
      setenv("AWS_ENDPOINT_URL", s3rver->endpoint().c_str(), 1);
      setenv("AWS_REGION", "us-east-1", 1);
      s3rver->put_directory("bench", "hf/llama/", model);
      Cli partition({TENSORSTREAM_CLI_PATH, "partition", "s3://bench/hf/llama/",
                     "s3://bench/raw/", "--tp", std::to_string(tp), "--memory-limit",
                     memory_limit});
      partition.finish(false);
    }
  }

  std::string s3_url() const { return "s3://bench/raw/"; }
  std::string http_url() const { return nginx->base_url() + "/model.safetensors"; }

  // `serve source` until ready; `while_ready` runs then, before SIGTERM.
  template <typename WhileReady>
  Served serve(const std::string& source, const WhileReady& while_ready) {
    testing::TempDir run;
    const auto socket = run.path() / "store.sock";
    Cli server({TENSORSTREAM_CLI_PATH, "serve", source, "--tp", std::to_string(tp), "--socket",
                socket.string(), "--kv-cache-memory", kv_cache_memory, "--memory-limit",
                memory_limit});
    Served served;
    for (int rank = 0; rank < tp; ++rank) {
      served.kv_cache_bytes +=
          static_cast<std::uint64_t>(json_number(server.wait_for_line("{\"rank\":"),
                                                 "kv_cache_bytes"));
    }
    const std::string ready = server.wait_for_line("{\"ready\":");
    served.start_to_ready = server.arrived();
    served.own_seconds = json_number(ready, "seconds");
    served.weight_bytes = static_cast<std::uint64_t>(json_number(ready, "bytes"));
    while_ready(socket);
    served.max_rss = server.finish(true);
    return served;
  }

  Served serve(const std::string& source) {
    return serve(source, [](const std::filesystem::path&) {});
  }

  Streamed stream(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{TENSORSTREAM_CLI_PATH, "stream"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    argv.insert(argv.end(), {"--json", "--memory-limit", memory_limit});
    Cli streamer(argv);
    const std::string summary = streamer.wait_for_line("{\"summary\":");
    streamer.finish(false);
    return {streamer.arrived(), json_number(summary, "seconds"),
            static_cast<std::uint64_t>(json_number(summary, "bytes"))};
  }
};

Environment& environment() {
  static Environment instance;
  return instance;
}

// Best GB/s of each run, whole process and in-process, by name, for the ratios at the end.
struct Rates {
  double whole = 0;
  double own = 0;
};
std::map<std::string, Rates>& rates() {
  static std::map<std::string, Rates> instance;
  return instance;
}
// Peak RSS of the server against what it should hold, by source.
struct Resident {
  std::uint64_t max_rss = 0;
  std::uint64_t weights = 0;
  std::uint64_t kv_cache = 0;
};
std::map<std::string, Resident>& residents() {
  static std::map<std::string, Resident> instance;
  return instance;
}
struct Latencies {
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  std::size_t count = 0;
};
Latencies attach_latencies;

void record(benchmark::State& state, const std::string& name, std::uint64_t bytes,
            double seconds, double own_seconds) {
  state.SetIterationTime(seconds);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  const double rate = static_cast<double>(bytes) / seconds / 1e9;
  const double own = static_cast<double>(bytes) / own_seconds / 1e9;
  state.counters["GB/s"] = rate;
  state.counters["own_GB/s"] = own;
  auto& best = rates()[name];
  best.whole = std::max(best.whole, rate);
  best.own = std::max(best.own, own);
}

void record_rss(benchmark::State& state, const std::string& source, const Served& served) {
  auto& resident = residents()[source];
  resident.max_rss = std::max(resident.max_rss, served.max_rss);
  resident.weights = served.weight_bytes;
  resident.kv_cache = served.kv_cache_bytes;
  state.counters["peak_RSS_MiB"] = static_cast<double>(served.max_rss) / (1 << 20);
}

void BM_ServeS3(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) return state.SkipWithError(why->c_str());
  auto& env = environment();
  for (auto _ : state) {
    const Served served = env.serve(env.s3_url());
    record(state, "serve s3", served.weight_bytes, served.start_to_ready, served.own_seconds);
    record_rss(state, "s3", served);
  }
}

void BM_StreamS3Ranks(benchmark::State& state) {
  if (auto why = testing::S3rverServer::unavailable()) return state.SkipWithError(why->c_str());
  auto& env = environment();
  for (auto _ : state) {
    Streamed all;
    for (int rank = 0; rank < env.tp; ++rank) {
      const Streamed one =
          env.stream({env.s3_url(), "--tp", std::to_string(env.tp), "--rank", std::to_string(rank)});
      all.seconds += one.seconds;
      all.own_seconds += one.own_seconds;
      all.bytes += one.bytes;
    }
    record(state, "stream s3", all.bytes, all.seconds, all.own_seconds);
  }
}

void BM_ServeHttp(benchmark::State& state) {
  auto& env = environment();
  if (!env.nginx) return state.SkipWithError("nginx is not installed");
  for (auto _ : state) {
    const Served served = env.serve(env.http_url());
    // Both http rates are of the file's bytes, each read once; the ranks hold a little more
    // (the norms are replicated).
    record(state, "serve http", env.model_bytes, served.start_to_ready, served.own_seconds);
    record_rss(state, "http", served);
  }
}

void BM_StreamHttp(benchmark::State& state) {
  auto& env = environment();
  if (!env.nginx) return state.SkipWithError("nginx is not installed");
  for (auto _ : state) {
    const Streamed streamed = env.stream({env.http_url()});
    record(state, "stream http", env.model_bytes, streamed.seconds, streamed.own_seconds);
  }
}

void BM_FreshMemoryCeiling(benchmark::State& state) {
  auto& env = environment();
  for (auto _ : state) {
    const auto start = Clock::now();
    const int fd = ::memfd_create("serve_bench", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(env.model_bytes)) != 0) {
      throw std::runtime_error("memfd_create failed");
    }
    void* memory = ::mmap(nullptr, env.model_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("mmap of the memfd failed");
    std::memset(memory, 1, env.model_bytes);
    benchmark::ClobberMemory();
    const double seconds = seconds_since(start);
    ::munmap(memory, env.model_bytes);
    ::close(fd);
    record(state, "fresh memory", env.model_bytes, seconds, seconds);
  }
}

// Touches one byte of every page of the largest weight, after the timed attaches: the mapping is
// the server's memory, not an empty promise. Returns the pages touched.
std::uint64_t touch_largest_weight(const std::filesystem::path& socket) {
  const store::AttachedRank rank = store::attach(socket, 0);
  const store::TensorEntry* largest = nullptr;
  for (const auto& entry : rank.manifest().tensors) {
    if (!rank.is_writable(entry) && (largest == nullptr || entry.bytes > largest->bytes)) {
      largest = &entry;
    }
  }
  if (largest == nullptr) throw std::runtime_error("rank 0 serves no weights");
  const auto bytes = rank.bytes(*largest);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  unsigned sum = 0;
  std::uint64_t pages = 0;
  for (std::size_t at = 0; at < bytes.size(); at += page, ++pages) {
    sum += std::to_integer<unsigned>(bytes[at]);
  }
  benchmark::DoNotOptimize(sum);
  return pages;
}

void BM_AttachLatency(benchmark::State& state) {
  auto& env = environment();
  if (!env.nginx && !env.s3rver) return state.SkipWithError("neither nginx nor s3rver runs");
  const std::string source = env.nginx ? env.http_url() : env.s3_url();
  for (auto _ : state) {
    std::vector<double> latencies(static_cast<std::size_t>(attach_threads * env.attaches));
    std::vector<std::exception_ptr> failures(attach_threads);
    std::uint64_t pages = 0;
    double wall = 0;
    env.serve(source, [&](const std::filesystem::path& socket) {
      std::latch start(attach_threads + 1);
      std::vector<std::jthread> threads;
      for (int t = 0; t < attach_threads; ++t) {
        threads.emplace_back([&, t] {
          const auto rank = static_cast<std::uint32_t>(t % env.tp);
          start.arrive_and_wait();
          try {
            for (int i = 0; i < env.attaches; ++i) {
              const auto begin = Clock::now();
              const store::AttachedRank attached = store::attach(socket, rank);
              latencies[static_cast<std::size_t>(t * env.attaches + i)] = seconds_since(begin);
              benchmark::DoNotOptimize(attached.manifest().tensors.size());
            }
          } catch (...) {
            failures[static_cast<std::size_t>(t)] = std::current_exception();
          }
        });
      }
      const auto begin = Clock::now();
      start.arrive_and_wait();
      threads.clear();
      wall = seconds_since(begin);
      for (const auto& failure : failures) {
        if (failure) std::rethrow_exception(failure);
      }
      pages = touch_largest_weight(socket);
    });
    std::sort(latencies.begin(), latencies.end());
    const auto at = [&](double q) {
      return latencies[static_cast<std::size_t>(q * static_cast<double>(latencies.size() - 1))] *
             1e3;
    };
    attach_latencies = {at(0.5), at(0.99), latencies.back() * 1e3, latencies.size()};
    state.SetIterationTime(wall);
    state.counters["p50_ms"] = attach_latencies.p50_ms;
    state.counters["p99_ms"] = attach_latencies.p99_ms;
    state.counters["max_ms"] = attach_latencies.max_ms;
    state.counters["attaches/s"] = static_cast<double>(latencies.size()) / wall;
    state.counters["pages_touched"] = static_cast<double>(pages);
  }
}

// Alternating, so that drift of the machine hits both sides.
BENCHMARK(BM_ServeS3)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_StreamS3Ranks)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_ServeS3)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_StreamS3Ranks)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_ServeHttp)->UseManualTime()->Iterations(3)->Unit(benchmark::kSecond);
BENCHMARK(BM_StreamHttp)->UseManualTime()->Iterations(3)->Unit(benchmark::kSecond);
BENCHMARK(BM_FreshMemoryCeiling)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_ServeHttp)->UseManualTime()->Iterations(3)->Unit(benchmark::kSecond);
BENCHMARK(BM_StreamHttp)->UseManualTime()->Iterations(3)->Unit(benchmark::kSecond);
BENCHMARK(BM_FreshMemoryCeiling)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK(BM_AttachLatency)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

void print_ratio(const char* what, const std::string& name, const std::string& ceiling) {
  const auto& r = rates();
  if (!r.contains(name) || !r.contains(ceiling)) return;
  const Rates& a = r.at(name);
  const Rates& b = r.at(ceiling);
  std::printf("  %-7s %5.2f GB/s vs %-12s %5.2f GB/s = %5.1f %%   in-process %5.2f vs %5.2f = "
              "%5.1f %%\n",
              what, a.whole, ceiling.c_str(), b.whole, 100 * a.whole / b.whole, a.own, b.own,
              100 * a.own / b.own);
}

void print_against_seed(const char* what, const std::string& name) {
  if (!rates().contains(name)) return;
  const double rate = rates().at(name).whole;
  std::printf("  %-7s %5.2f GB/s vs the seed's %.2f GB/s per process: x%.2f\n", what, rate,
              seed_gb_per_s, rate / seed_gb_per_s);
}

void print_summary() {
  const auto& env = environment();
  std::printf("\nserve of %.2f GB at TP %d (every rank in one server), best start-to-ready "
              "against the best stream of the same bytes:\n",
              static_cast<double>(env.model_bytes) / 1e9, env.tp);
  print_ratio("s3://", "serve s3", "stream s3");
  print_ratio("http://", "serve http", "stream http");
  print_ratio("s3://", "serve s3", "fresh memory");
  print_ratio("http://", "serve http", "fresh memory");
  print_against_seed("s3://", "serve s3");
  print_against_seed("http://", "serve http");
  if (attach_latencies.count > 0) {
    std::printf("  attach, %d threads, %zu attaches: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                attach_threads, attach_latencies.count, attach_latencies.p50_ms,
                attach_latencies.p99_ms, attach_latencies.max_ms);
  }
  const std::uint64_t limit = parse_byte_size(env.memory_limit, "TENSORSTREAM_BENCH_MEMORY");
  for (const auto& [source, resident] : residents()) {
    const std::uint64_t bound = resident.weights + resident.kv_cache + limit;
    std::printf("  peak RSS of serve from %-4s %6.0f MiB vs weights %.0f + KV cache %.0f + "
                "--memory-limit %.0f = %.0f MiB (%.0f %%)\n",
                source.c_str(), static_cast<double>(resident.max_rss) / (1 << 20),
                static_cast<double>(resident.weights) / (1 << 20),
                static_cast<double>(resident.kv_cache) / (1 << 20),
                static_cast<double>(limit) / (1 << 20), static_cast<double>(bound) / (1 << 20),
                100.0 * static_cast<double>(resident.max_rss) / static_cast<double>(bound));
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary();
}
