// Fault soak: streams a checkpoint many times through the fault-injecting proxy and counts how
// the runs end: every byte exact, a clean failure (an exception, timed from the start of the
// run), or wrong bytes delivered (never acceptable):
//   http://  a loopback nginx behind the proxy;
//   s3://    a loopback s3rver behind the proxy;
//   az://    a loopback Azurite behind the proxy, read with Shared Key.
// At each fault rate, that share of the object reads gets one fault drawn evenly from 503, 500, a
// reset mid-body, a short body (clean close mid-body) and a 2 s stall mid-body. Streams use the
// default StreamerOptions and HttpOptions, so the retry counts show what the defaults survive.
//
// Environment:
//   TENSORSTREAM_BENCH_PRESET  checkpoint preset (default llama-7b-4layers, about 2.1 GB; "tiny"
//                              for a quick run, read in 64 KiB chunks so that it takes many reads)
//   TENSORSTREAM_SOAK_RUNS     runs per backend and rate (default 10)
//   TENSORSTREAM_SOAK_RATES    comma-separated fault rates (default 0.2,0.5)

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "support/fault_proxy.hpp"
#include "support/nginx_server.hpp"
#include "support/azurite_server.hpp"
#include "support/s3rver_server.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace {

using namespace tensorstream;
using Clock = std::chrono::steady_clock;
using testing::FaultProxy;

using bench::environment_or;

// The checkpoint's bytes, mapped read-only, to compare every streamed tensor against.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : size_(std::filesystem::file_size(path)) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path.string());
    data_ = static_cast<const std::byte*>(::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0));
    ::close(fd);
    if (data_ == MAP_FAILED) throw std::runtime_error("cannot map " + path.string());
    std::uint64_t header_length = 0;
    std::memcpy(&header_length, data_, 8);
    data_start_ = 8 + header_length;
  }
  ~MappedFile() { ::munmap(const_cast<std::byte*>(data_), size_); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool holds(const StreamedTensor& tensor) const {
    const auto bytes = tensor.bytes();
    return data_start_ + tensor.info.end <= size_ && bytes.size() == tensor.info.byte_size() &&
           std::memcmp(bytes.data(), data_ + data_start_ + tensor.info.begin, bytes.size()) == 0;
  }

  std::uint64_t size() const { return size_; }

 private:
  std::uint64_t size_;
  const std::byte* data_ = nullptr;
  std::uint64_t data_start_ = 0;
};

struct Run {
  enum class End { exact, failed, wrong_bytes } end = End::exact;
  double seconds = 0;
  std::uint64_t retries = 0;
  int injected = 0;
  std::string error;
};

// One stream of `url`, every tensor checked against `file`.
Run stream_once(const std::string& url, StreamerOptions options, const MappedFile& file,
                const FaultProxy& proxy) {
  Run run;
  const auto start = Clock::now();
  std::unique_ptr<RawStreamer> streamer;
  try {
    streamer = std::make_unique<RawStreamer>(url, options);
    while (auto tensor = streamer->next_blocking()) {
      if (!file.holds(*tensor)) {
        run.end = Run::End::wrong_bytes;
        run.error = "wrong bytes in " + tensor->info.name;
        break;
      }
    }
  } catch (const std::exception& error) {
    run.end = Run::End::failed;
    run.error = error.what();
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (streamer) run.retries = streamer->stats().retries;
  run.injected = proxy.injected();
  return run;
}

void report(const std::string& backend, double rate, const std::vector<Run>& runs) {
  int exact = 0;
  int wrong = 0;
  std::vector<std::uint64_t> retries;
  std::vector<double> exact_seconds;
  std::vector<double> failure_seconds;
  std::map<std::string, int> errors;
  int injected = 0;
  for (const auto& run : runs) {
    retries.push_back(run.retries);
    injected += run.injected;
    if (run.end == Run::End::exact) {
      ++exact;
      exact_seconds.push_back(run.seconds);
    } else {
      if (run.end == Run::End::wrong_bytes) ++wrong;
      if (run.end == Run::End::failed) failure_seconds.push_back(run.seconds);
      ++errors[run.error.substr(0, 160)];
    }
  }
  std::sort(retries.begin(), retries.end());
  std::sort(exact_seconds.begin(), exact_seconds.end());
  std::sort(failure_seconds.begin(), failure_seconds.end());
  const auto median = [](const auto& sorted) { return sorted[sorted.size() / 2]; };
  std::printf("%-5s %3.0f %%  byte-exact %2d/%-2zu  wrong bytes %d  faults injected %5d  "
              "retries min/median/max %llu/%llu/%llu",
              backend.c_str(), rate * 100, exact, runs.size(), wrong, injected,
              static_cast<unsigned long long>(retries.front()),
              static_cast<unsigned long long>(median(retries)),
              static_cast<unsigned long long>(retries.back()));
  if (!exact_seconds.empty()) std::printf("  exact runs median %.1f s", median(exact_seconds));
  std::printf("\n");
  if (!failure_seconds.empty()) {
    std::printf("      clean failures after (s):");
    for (const double seconds : failure_seconds) std::printf(" %.1f", seconds);
    std::printf("\n");
  }
  for (const auto& [error, count] : errors) std::printf("      %dx %s\n", count, error.c_str());
  std::fflush(stdout);
}

std::vector<double> rates() {
  std::vector<double> values;
  const std::string text = environment_or("TENSORSTREAM_SOAK_RATES", "0.2,0.5");
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    values.push_back(std::stod(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

}  // namespace

int main() {
  const std::string preset = environment_or("TENSORSTREAM_BENCH_PRESET", "llama-7b-4layers");
  const int runs = std::stoi(environment_or("TENSORSTREAM_SOAK_RUNS", "10"));
  testing::TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = preset});
  const auto path = dir.path() / "model.safetensors";
  const MappedFile file(path);
  std::printf("fault soak: %s (%.2f GB), %d runs per backend and rate, default retry options\n",
              preset.c_str(), static_cast<double>(file.size()) / 1e9, runs);
  std::fflush(stdout);

  StreamerOptions options;
  if (preset == "tiny") options.chunk_size = 64 * 1024;

  testing::NginxServer nginx({.root = dir.path()});
  std::unique_ptr<testing::S3rverServer> s3rver;
  if (auto why = testing::S3rverServer::unavailable()) {
    std::printf("s3 skipped: %s\n", why->c_str());
  } else {
    s3rver = std::make_unique<testing::S3rverServer>(std::vector<std::string>{"bench"});
    s3rver->put("bench", "model/model.safetensors", path);
    setenv("AWS_ACCESS_KEY_ID", testing::S3rverServer::access_key_id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", testing::S3rverServer::secret_access_key, 1);
    setenv("AWS_REGION", "us-east-1", 1);
  }

  std::unique_ptr<testing::AzuriteServer> azurite;
  if (auto why = testing::AzuriteServer::unavailable()) {
    std::printf("az skipped: %s\n", why->c_str());
  } else {
    azurite = std::make_unique<testing::AzuriteServer>();
    azurite->create_container("bench");
    azurite->put_blob("bench", "model/model.safetensors", path);
    setenv("AZURE_STORAGE_KEY", testing::AzuriteServer::account_key, 1);
  }

  for (const double rate : rates()) {
    for (const std::string backend : {"http", "s3", "az"}) {
      if ((backend == "s3" && !s3rver) || (backend == "az" && !azurite)) continue;
      std::vector<Run> results;
      for (int i = 0; i < runs; ++i) {
        const std::uint16_t port = backend == "http" ? nginx.port()
                                   : backend == "s3" ? s3rver->port()
                                                     : azurite->port();
        FaultProxy proxy(port, {.mix_rate = rate, .seed = static_cast<std::uint64_t>(i + 1)});
        std::string url = proxy.endpoint() + "/model.safetensors";
        StreamerOptions run_options = options;
        if (backend == "s3") {
          setenv("AWS_ENDPOINT_URL", proxy.endpoint().c_str(), 1);
          url = "s3://bench/model/";
        } else if (backend == "az") {
          run_options.store.azure().endpoint =
              proxy.endpoint() + "/" + testing::AzuriteServer::account_name;
          url = "az://bench/model/";
        }
        results.push_back(stream_once(url, run_options, file, proxy));
        const Run& run = results.back();
        std::printf("  %s %.0f %% run %d: %s after %.1f s, %llu retries, %d faults\n",
                    backend.c_str(), rate * 100, i + 1,
                    run.end == Run::End::exact    ? "byte-exact"
                    : run.end == Run::End::failed ? "failed"
                                                  : "WRONG BYTES",
                    run.seconds, static_cast<unsigned long long>(run.retries), run.injected);
        std::fflush(stdout);
      }
      report(backend, rate, results);
    }
  }
  return 0;
}
