#pragma once

#include <string_view>

namespace tensorstream::detail {

/// Whether `key` is a relative path that stays inside the directory it is taken relative to: not
/// empty, not starting with '/', and made of segments that are neither empty, "." nor "..". Keys
/// read from an index or a listing are joined to a base this way; any other key could name an
/// object, or write a file, outside it.
bool is_relative_key_inside(std::string_view key);

}  // namespace tensorstream::detail
