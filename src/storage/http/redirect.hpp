#pragma once
// Where a redirect leads: a Location header resolved against the URL that answered it.

#include <string>
#include <string_view>

namespace tensorstream {

/// The absolute URL `location` names, relative to the request of `target` (path and query) at
/// `origin` ("scheme://host[:port]"), as RFC 3986 section 5.2 resolves references: an absolute
/// URL, "//host/path", "/path", "?query" or a relative path, whose "." and ".." segments are
/// removed. A fragment is dropped.
std::string resolve_location(std::string_view origin, std::string_view target,
                             std::string_view location);

}  // namespace tensorstream
