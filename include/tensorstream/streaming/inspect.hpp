#pragma once
/// @file
/// Reading the headers of a checkpoint without loading any tensor.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/header.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// The validated header of one safetensors object.
struct FileHeader {
  std::string url;          ///< Where the object is.
  std::uint64_t size = 0;   ///< Its size in bytes.
  Header header;            ///< Its tensors and metadata.
};

/// Fetches and validates the headers of the files a stream of `remote_path` would read, in the
/// same order and with the same selection, at most max_concurrency at a time (unset: from the
/// environment, as for a stream): each header holds the tensors the stream
/// would load (those an index lists; a name repeated in a later file is left out). Blocks the
/// calling thread.
/// Throws what RawStreamer::next() would for the same problems.
TENSORSTREAM_API
std::vector<FileHeader> inspect(const std::string& remote_path, StreamerOptions options = {});

/// Like inspect(), on the awaiting coroutine's executor: a service with an io_context of its
/// own reads the headers there, without blocking its thread.
TENSORSTREAM_API
boost::asio::awaitable<std::vector<FileHeader>> async_inspect(std::string remote_path,
                                                              StreamerOptions options = {});

}  // namespace tensorstream
