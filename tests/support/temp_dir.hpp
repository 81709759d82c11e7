#pragma once
// A scratch directory for one test.

#include <filesystem>

namespace tensorstream::testing {

/// A fresh directory under /tmp (mkdtemp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tensorstream::testing
