#pragma once
// Writing a whole object through an ObjectWriter in pieces, as a caller that streams does.

#include <boost/asio/awaitable.hpp>
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream::testing {

/// Writes `content` to `writer` in pieces of `piece` bytes (the last may be shorter), then
/// commits.
inline boost::asio::awaitable<void> write_all(ObjectWriter& writer, const std::string& content,
                                              std::size_t piece) {
  const auto bytes = std::as_bytes(std::span(content));
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    co_await writer.write(bytes.subspan(at, std::min(piece, bytes.size() - at)));
  }
  co_await writer.commit();
}

}  // namespace tensorstream::testing
