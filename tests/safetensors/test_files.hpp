#pragma once
// Reading back the files the safetensors tests write.

#include <array>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "tensorstream/safetensors/header.hpp"

namespace tensorstream {

/// The whole content of `path`.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream content;
  content << in.rdbuf();
  return std::move(content).str();
}

/// The validated header of the safetensors file whose bytes are `file`.
inline Header read_header(std::string_view file, std::string_view object) {
  if (file.size() < 8) throw std::runtime_error("file too small");
  std::array<std::byte, 8> prefix;
  std::memcpy(prefix.data(), file.data(), 8);
  const auto length = parse_header_length(prefix, file.size(), object);
  return parse_header(file.substr(8, length), file.size(), object);
}

}  // namespace tensorstream
