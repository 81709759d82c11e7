// The synchronous loop, as in the Python original: downloads keep running on the stream's threads
// while the loop body works on each tensor. Errors (a missing object, a malformed header, an
// HTTP failure) are thrown by the loop and reported with a non-zero exit.
//
//   example_sync_loop [URL]   (default: a synthetic model written to a temporary directory)

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

int main(int argc, char** argv) try {
  std::string url;
  if (argc > 1) {
    url = argv[1];
  } else {
    // A directory per example: examples run side by side must not write each other's model.
    const auto dir =
        std::filesystem::temp_directory_path() / "tensorstream-example-sync-loop";
    tensorstream::generate_synthetic_model(dir, {.preset = "tiny"});
    url = dir.string();
  }

  tensorstream::StreamerOptions options;
  options.chunk_size = 4 << 20;
  options.memory_limit = 1ull << 30;
  tensorstream::SafeTensorsStreamer streamer(url, "/srv/model", options);
  double checksum = 0;
  for (auto& [name, tensor] : streamer.get_tensors()) {
    checksum += tensor.to(at::kFloat).abs().sum().item<double>();
    std::printf("%-50s %s %lld elements\n", name.c_str(), std::string(tensor.dtype().name()).c_str(),
                static_cast<long long>(tensor.numel()));
  }
  const auto stats = streamer.stats();
  std::printf("%llu tensors in %.3f s (sum of |x| = %.3f)\n",
              static_cast<unsigned long long>(stats.tensors), stats.elapsed_seconds, checksum);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "example_sync_loop: error: %s\n", error.what());
  return 1;
}
