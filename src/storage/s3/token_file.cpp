#include "storage/s3/token_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

std::string read_token_file(const std::string& path, const std::string& variable,
                            const std::string& provider) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw CredentialsError("AWS", provider,
                           variable + " " + path + ": " + std::strerror(errno), true);
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    throw CredentialsError("AWS", provider,
                           variable + " " + path + ": " + std::strerror(errno), true);
  }
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

}  // namespace tensorstream::s3
