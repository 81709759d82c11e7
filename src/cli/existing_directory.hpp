#pragma once
// A directory the user named must be there: a mistyped name would otherwise read as an empty
// directory, reported clean or empty with exit status 0.

#include <filesystem>
#include <string>
#include <system_error>

#include "tensorstream/error.hpp"

namespace tensorstream::cli {

/// Returns when `path` is a directory.
/// @throws NotFoundError "PATH: no such directory" or "PATH: not a directory".
inline void require_directory(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return;
  throw NotFoundError(path, std::filesystem::exists(path, error) ? "not a directory"
                                                                 : "no such directory");
}

}  // namespace tensorstream::cli
