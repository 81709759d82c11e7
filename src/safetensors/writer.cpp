#include "tensorstream/safetensors/writer.hpp"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <system_error>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

constexpr std::size_t write_buffer_size = 16u << 20;

bool is_utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

// Validates what encode_header would write; `where` starts every message (a path or "safetensors
// header") so the caller's file is named.
void check_specs(std::span<const TensorSpec> tensors,
                 const std::map<std::string, std::string>& metadata, const std::string& where) {
  std::set<std::string_view> names;
  for (const auto& tensor : tensors) {
    if (tensor.name == "__metadata__") {
      throw InvalidArgument(where + ": \"__metadata__\" cannot be a tensor name");
    }
    if (!is_utf8(tensor.name)) {
      throw InvalidArgument(where + ": tensor name " + json_string(tensor.name) + " is not UTF-8");
    }
    if (!names.insert(tensor.name).second) {
      throw InvalidArgument(where + ": tensor " + json_string(tensor.name) +
                            " appears more than once");
    }
    try {
      tensor_byte_size(tensor);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(where + ": " + e.what());
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!is_utf8(key) || !is_utf8(value)) {
      throw InvalidArgument(where + ": metadata entry " + json_string(key) + " is not UTF-8");
    }
  }
  const auto format = metadata.find("format");
  if (format != metadata.end() && format->second != "pt") {
    throw InvalidArgument(where + ": metadata format " + json_string(format->second) +
                          " is not \"pt\"");
  }
}

std::string errno_message(int error) { return std::system_category().message(error); }

// A file written under a temporary name that replaces `path` only once it is complete.
class PartialFile {
 public:
  explicit PartialFile(std::filesystem::path path) : path_(std::move(path)), partial_(path_) {
    partial_ += ".partial";
    fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create " + partial_.string(), errno);
  }

  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  ~PartialFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(partial_.c_str());
  }

  void write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
      const auto written = ::write(fd_, bytes.data(), bytes.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno);
      }
      bytes = bytes.subspan(static_cast<std::size_t>(written));
    }
  }

  void commit() {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("write failed", errno);
    if (::rename(partial_.c_str(), path_.c_str()) != 0) {
      fail("cannot rename " + partial_.string() + " into place", errno);
    }
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const {
    throw StorageError(path_.string(), what + ": " + errno_message(error));
  }

  std::filesystem::path path_;
  std::filesystem::path partial_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

std::uint64_t tensor_byte_size(const TensorSpec& tensor) {
  std::int64_t numel = 1;
  bool overflow = false;
  bool empty = false;
  for (const auto dim : tensor.shape) {
    if (dim < 0) {
      throw InvalidArgument("tensor " + json_string(tensor.name) + ": negative dimension " +
                            std::to_string(dim));
    }
    empty = empty || dim == 0;
    overflow = overflow || __builtin_mul_overflow(numel, dim, &numel);
  }
  if (empty) return 0;
  std::uint64_t bytes = 0;
  if (overflow || __builtin_mul_overflow(static_cast<std::uint64_t>(numel),
                                         element_size(tensor.dtype), &bytes)) {
    throw InvalidArgument("tensor " + json_string(tensor.name) + ": shape has too many elements");
  }
  return bytes;
}

std::string encode_header(std::span<const TensorSpec> tensors,
                          const std::map<std::string, std::string>& metadata) {
  check_specs(tensors, metadata, "safetensors header");
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"";
  for (const auto& [key, value] : metadata) {
    if (key == "format") continue;
    json += ',';
    append_json_string(json, key);
    json += ':';
    append_json_string(json, value);
  }
  json += '}';
  std::uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    const auto end = offset + tensor_byte_size(tensor);
    json += ',';
    append_json_string(json, tensor.name);
    json += ":{\"dtype\":\"";
    json += dtype_name(tensor.dtype);
    json += "\",\"shape\":[";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
      if (i > 0) json += ',';
      json += std::to_string(tensor.shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(end) + "]}";
    offset = end;
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out(8, '\0');
  for (std::size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((static_cast<std::uint64_t>(json.size()) >> (8 * i)) & 0xff);
  }
  return out + json;
}

std::uint64_t write_safetensors(const std::filesystem::path& path,
                                std::span<const TensorSpec> tensors, const TensorFiller& fill,
                                const std::map<std::string, std::string>& metadata) {
  check_specs(tensors, metadata, path.string());
  const auto header = encode_header(tensors, metadata);
  std::uint64_t data_size = 0;
  for (const auto& tensor : tensors) data_size += tensor_byte_size(tensor);

  PartialFile file(path);
  file.write(std::as_bytes(std::span(header)));
  // Small files get a small buffer; large ones never more than write_buffer_size.
  const auto capacity = static_cast<std::size_t>(std::min<std::uint64_t>(
      write_buffer_size, std::max<std::uint64_t>(data_size, 1)));
  const auto buffer = std::make_unique_for_overwrite<std::byte[]>(capacity);
  std::size_t used = 0;
  for (const auto& tensor : tensors) {
    const auto size = tensor_byte_size(tensor);
    for (std::uint64_t offset = 0; offset < size;) {
      const auto piece =
          static_cast<std::size_t>(std::min<std::uint64_t>(size - offset, capacity - used));
      fill(tensor, offset, std::span(buffer.get() + used, piece));
      used += piece;
      offset += piece;
      if (used == capacity) {
        file.write(std::span(buffer.get(), used));
        used = 0;
      }
    }
  }
  file.write(std::span(buffer.get(), used));
  file.commit();
  return header.size() + data_size;
}

std::uint64_t write_safetensors(const std::filesystem::path& path,
                                std::span<const TensorSpec> tensors,
                                std::span<const std::span<const std::byte>> data,
                                const std::map<std::string, std::string>& metadata) {
  if (data.size() != tensors.size()) {
    throw InvalidArgument(path.string() + ": " + std::to_string(data.size()) +
                          " byte buffers for " + std::to_string(tensors.size()) + " tensors");
  }
  check_specs(tensors, metadata, path.string());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto expected = tensor_byte_size(tensors[i]);
    if (data[i].size() != expected) {
      throw InvalidArgument(path.string() + ": tensor " + json_string(tensors[i].name) + " needs " +
                            std::to_string(expected) + " bytes, got " +
                            std::to_string(data[i].size()));
    }
  }
  const auto copy = [&](const TensorSpec& tensor, std::uint64_t offset,
                        std::span<std::byte> destination) {
    const auto& bytes = data[static_cast<std::size_t>(&tensor - tensors.data())];
    std::memcpy(destination.data(), bytes.data() + offset, destination.size());
  };
  return write_safetensors(path, tensors, copy, metadata);
}

}  // namespace tensorstream
