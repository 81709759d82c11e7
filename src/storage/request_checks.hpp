#pragma once
// Validation the network stores apply to a request before sending it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tensorstream {

/// Throws InvalidArgument naming `url` unless `key` is a path starting with '/' that names an
/// object of a bucket (`service`, e.g. "S3", says whose) rather than the bucket itself.
void check_bucket_key(const std::string& url, const std::string& key, std::string_view service);

/// Throws InvalidArgument naming `url` when `size` bytes at `offset` run past the largest
/// representable offset, which no Range header could express.
void check_byte_range(const std::string& url, std::uint64_t offset, std::size_t size);

}  // namespace tensorstream
