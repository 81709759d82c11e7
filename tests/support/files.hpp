#pragma once
// Whole files read and written by the tests, and the files a directory holds.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::testing {

/// The whole content of `path`. Throws std::runtime_error when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

/// Writes `bytes` as the whole content of `path`, creating its parent directories. Throws
/// std::runtime_error when it cannot be written.
void write_file(const std::filesystem::path& path, std::string_view bytes);

/// Rewrites the safetensors file at `path` with every byte of its tensors inverted (header kept),
/// under a temporary name renamed over it, as a deployment replaces a model: a new version whose
/// every tensor differs from the old, its expected bytes the old ones inverted.
void invert_tensor_data(const std::filesystem::path& path);

/// Sets the modification time of `root` (a file, or every file under a directory) a minute into
/// the past, as of a model written a while before it is served: its server's validators (an
/// nginx ETag of the time in seconds) then tell any later rewrite apart, and a cache trusts them
/// (ObjectVersion::settled).
void age_files(const std::filesystem::path& root);

/// Every regular file under `root`, as paths relative to it, sorted; none when `root` does not
/// exist.
std::vector<std::string> files_under(const std::filesystem::path& root);

}  // namespace tensorstream::testing
