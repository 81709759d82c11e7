#pragma once
// The destination of a command that writes local files only.

#include <filesystem>
#include <string>
#include <string_view>

namespace tensorstream::cli {

/// The local directory `destination` names: a path or a file:// URL. Any other URL
/// (`s3://b/x`, `gs://`, `http://`) throws InvalidArgument saying that `command` writes local
/// directories only, so that it never becomes a local folder named `s3:`.
std::filesystem::path local_destination(const std::string& destination,
                                        std::string_view command);

}  // namespace tensorstream::cli
