// The input is the JSON text of an attach reply's manifest, as whatever answers on a store
// server's socket may send it to a worker. The parser either refuses it with a FormatError that
// names the source, or returns a manifest whose every tensor lies inside its region, and which
// survives being written and parsed again unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tensorstream/error.hpp"
#include "tensorstream/store/manifest.hpp"

namespace store = tensorstream::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  store::Manifest manifest;
  try {
    manifest = store::parse_manifest(json, "fuzz");
  } catch (const tensorstream::FormatError& e) {
    if (!std::string_view(e.what()).starts_with("fuzz: ")) __builtin_trap();
    return 0;
  }
  for (const auto& tensor : manifest.tensors) {
    const store::RegionInfo* region = nullptr;
    for (const auto& candidate : manifest.regions) {
      if (candidate.name == tensor.region) region = &candidate;
    }
    if (region == nullptr || tensor.bytes > region->bytes ||
        tensor.offset > region->bytes - tensor.bytes) {
      __builtin_trap();
    }
  }
  if (store::parse_manifest(store::to_json(manifest), "fuzz") != manifest) __builtin_trap();
  return 0;
}
