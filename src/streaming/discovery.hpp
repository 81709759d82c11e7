#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorstream/safetensors/header.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// One safetensors object and its validated header.
struct SafetensorsFile {
  std::string key;
  std::string url;
  std::uint64_t size = 0;
  Header header;
};

/// Parses a stream's path: local paths become absolute, and a local directory named without its
/// trailing '/' is a prefix.
Url resolve_url(const std::string& remote_path);

/// The keys of the files `url` names, in the order their tensors take precedence: the file
/// itself, or the `*.safetensors` files under a prefix (the rank's files with tensor parallelism).
boost::asio::awaitable<std::vector<std::string>> select_files(ObjectStore& store, const Url& url,
                                                              const StreamerOptions& options);

/// Fetches and validates the header of every file concurrently; results keep the order of `keys`.
boost::asio::awaitable<std::vector<SafetensorsFile>> read_headers(ObjectStore& store,
                                                                  std::vector<std::string> keys);

}  // namespace tensorstream::detail
