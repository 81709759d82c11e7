#include "support/files.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tensorstream::testing {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  // One read of the whole size: the sanitizer builds are unoptimised, where a character at a
  // time through istreambuf_iterator took seconds for a model.
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    throw std::runtime_error("cannot read " + path.string());
  }
  return bytes;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void age_files(const std::filesystem::path& root) {
  const auto minute_ago =
      std::filesystem::file_time_type::clock::now() - std::chrono::minutes(1);
  if (!std::filesystem::is_directory(root)) {
    std::filesystem::last_write_time(root, minute_ago);
    return;
  }
  for (const auto& file : std::filesystem::recursive_directory_iterator(root)) {
    if (file.is_regular_file()) std::filesystem::last_write_time(file.path(), minute_ago);
  }
}

void invert_tensor_data(const std::filesystem::path& path) {
  std::string bytes = read_file(path);
  std::uint64_t header = 0;
  if (bytes.size() < sizeof header) throw std::runtime_error(path.string() + " is not safetensors");
  std::memcpy(&header, bytes.data(), sizeof header);
  for (std::size_t i = sizeof header + header; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(~bytes[i]);
  }
  const auto next = path.string() + ".next";
  write_file(next, bytes);
  std::filesystem::rename(next, path);
}

std::vector<std::string> files_under(const std::filesystem::path& root) {
  std::vector<std::string> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      files.push_back(entry.path().lexically_relative(root).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace tensorstream::testing
