#include "cli/local_destination.hpp"

#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::cli {

std::filesystem::path local_destination(const std::string& destination,
                                        std::string_view command) {
  if (destination.find("://") == std::string::npos) return destination;
  const Url url = Url::parse(destination);
  if (url.scheme == "file") return url.path;
  throw InvalidArgument(destination + ": " + std::string(command) +
                        " writes to local directories only; writing to " + url.scheme +
                        ":// is not supported yet");
}

}  // namespace tensorstream::cli
