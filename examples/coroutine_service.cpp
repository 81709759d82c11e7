// Loading weights inside an async service: the streamer runs on the service's own io_context
// (no thread of its own), which keeps serving (here, a heartbeat timer) while tensors arrive.
// A failed load is reported and ends the service with a non-zero exit.
//
//   example_coroutine_service [URL]   (default: a synthetic model written to a temporary directory)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace asio = boost::asio;

int main(int argc, char** argv) {
  std::string url;
  if (argc > 1) {
    url = argv[1];
  } else {
    // A directory per example: examples run side by side must not write each other's model.
    const auto dir =
        std::filesystem::temp_directory_path() / "tensorstream-example-coroutine-service";
    tensorstream::generate_synthetic_model(dir, {.preset = "tiny", .shards = 2});
    url = dir.string() + "/";
  }

  asio::io_context service;
  tensorstream::SafeTensorsStreamer streamer(service.get_executor(), url);
  bool loading = true;
  int heartbeats = 0;
  int exit_code = 0;

  asio::co_spawn(
      service,
      [&]() -> asio::awaitable<void> {
        std::size_t tensors = 0;
        while (auto tensor = co_await streamer.next()) {
          auto& [name, value] = *tensor;
          ++tensors;
          std::cout << name << ' ' << value.sizes() << ' ' << value.dtype() << '\n';
        }
        const auto stats = streamer.stats();
        std::printf("%zu tensors, %.3f GB/s, first after %.1f ms, %d heartbeats meanwhile\n", tensors,
                    stats.gigabytes_per_second(), stats.first_tensor_seconds * 1e3, heartbeats);
      },
      // Not asio::detached, which would drop the error: the service must hear that loading failed.
      [&](std::exception_ptr error) {
        loading = false;
        if (!error) return;
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "example_coroutine_service: error: %s\n", e.what());
        }
        exit_code = 1;
      });

  asio::co_spawn(
      service,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(service);
        while (loading) {
          timer.expires_after(std::chrono::milliseconds(1));
          co_await timer.async_wait(asio::use_awaitable);
          ++heartbeats;
        }
      },
      [](std::exception_ptr) {});

  service.run();
  return exit_code;
}
