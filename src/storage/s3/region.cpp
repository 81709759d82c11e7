#include "storage/s3/region.hpp"

#include "storage/environment.hpp"
#include "storage/s3/shared_profile.hpp"

namespace tensorstream::s3 {

std::string resolve_region() {
  for (const char* variable : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    std::string region = environment(variable);
    if (!region.empty()) return region;
  }
  const SharedProfile profile = load_shared_profile();
  const auto region = profile.settings.find("region");
  if (region != profile.settings.end() && !region->second.empty()) return region->second;
  return "us-east-1";
}

}  // namespace tensorstream::s3
