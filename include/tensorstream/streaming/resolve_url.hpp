#pragma once
/// @file
/// How a stream reads the path it is given, for tools that list or copy what a stream would read.

#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Parses a stream's path as the streamers do: local paths become absolute, a local directory
/// named without its trailing '/' is a prefix, and so is the path of an s3:// or gs:// URL (any
/// UrlForm::bucket scheme's) whose last segment does not end in ".safetensors",
/// ".safetensors.index.json" or ".bin" (buckets have no directories to check, and the Python
/// original takes such paths as prefixes). Throws InvalidArgument for a path that is not a URL of
/// a registered scheme.
TENSORSTREAM_API
Url resolve_url(const std::string& remote_path);

}  // namespace tensorstream
