#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/rendezvous_address.hpp"
#include "tensorstream/distributed/distributed_options.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

constexpr const char* plugin_name = "libtensorstream_c10d.so";

using JoinFunction = BroadcastGroup* (*)(const char* host, unsigned short port, int world_size,
                                         int rank, const char* group_key, const char* member,
                                         long long timeout_ms,
                                         void (*progress)(const char* message), char* error,
                                         std::size_t error_size);

void log_progress(const char* message) { log(LogLevel::debug, message); }

// The plugin at TENSORSTREAM_C10D_LIBRARY, else next to the library (or program) holding this
// code, or in the lib/ beside the bin/ of such a program, where the build and an installation
// put it, else where this build would install it. Loaded once, never unloaded:
// libtorch does not support being unloaded.
JoinFunction load_plugin() {
  static std::once_flag once;
  static JoinFunction join = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* path = std::getenv("TENSORSTREAM_C10D_LIBRARY"); path && *path) {
      candidates.emplace_back(path);
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&load_plugin), &info) != 0 && info.dli_fname != nullptr) {
      const std::string self = info.dli_fname;
      const std::string directory = self.substr(0, self.rfind('/') + 1);
      candidates.push_back(directory + plugin_name);
      // A program in PREFIX/bin, whatever prefix the package was installed to.
      candidates.push_back(directory + "../" TENSORSTREAM_C10D_LIBDIR "/" + plugin_name);
    }
    candidates.emplace_back(TENSORSTREAM_C10D_INSTALLED);
    for (const auto& candidate : candidates) {
      void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        failure += std::string(failure.empty() ? "" : "; ") + dlerror();
        continue;
      }
      join = reinterpret_cast<JoinFunction>(dlsym(handle, "tensorstream_c10d_join"));
      if (join != nullptr) return;
      failure += "; " + candidate + " has no tensorstream_c10d_join";
    }
  });
  if (join == nullptr) {
    throw Error(std::string("distributed streaming needs ") + plugin_name +
                ", which is built with libtorch: " + failure);
  }
  return join;
}

}  // namespace

std::shared_ptr<BroadcastGroup> join_group(const DistributedOptions& options,
                                           const std::string& group_key,
                                           const std::string& member) {
  detail::check_distributed_options(options);
  const detail::RendezvousAddress address = detail::parse_rendezvous(options.rendezvous);
  const JoinFunction join = load_plugin();
  char error[2048] = "";
  BroadcastGroup* group =
      join(address.host.c_str(), address.port, options.world_size, options.rank,
           group_key.c_str(), member.c_str(), options.timeout.count(), &log_progress, error,
           sizeof error);
  if (group == nullptr) throw Error(error);
  return std::shared_ptr<BroadcastGroup>(group);
}

}  // namespace tensorstream
