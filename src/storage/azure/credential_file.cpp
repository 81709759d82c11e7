#include "storage/azure/credential_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "tensorstream/error.hpp"

namespace tensorstream::azure {

std::string read_credential_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument(path + ": " + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) throw InvalidArgument(path + ": " + std::strerror(errno));
  return text;
}

}  // namespace tensorstream::azure
