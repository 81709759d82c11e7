#pragma once
// The requests of the Cloud Storage JSON API that GcsStore makes, and the parsing of their
// responses: object metadata, media downloads and object listings.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/bucket_listing.hpp"

namespace tensorstream::gcs {

/// The target of an object's size: "/storage/v1/b/BUCKET/o/NAME?fields=size", with bucket and
/// name percent-encoded, '/' included.
std::string metadata_target(std::string_view bucket, std::string_view name);

/// The target of an object's bytes: "/storage/v1/b/BUCKET/o/NAME?alt=media".
std::string media_target(std::string_view bucket, std::string_view name);

/// The target of one page of the objects whose names start with `prefix`, grouped at '/' when
/// `delimited`, continuing at `page_token` when given; only names and sizes are asked for.
std::string list_target(std::string_view bucket, std::string_view prefix, bool delimited,
                        const std::optional<std::string>& page_token);

/// The "size" of an object resource (a decimal string). Throws FormatError naming `url` for a
/// body without one.
std::uint64_t parse_object_size(std::string_view body, const std::string& url);

/// Parses an objects resource ({"items": [{"name", "size"}...], "nextPageToken"}); "prefixes"
/// are ignored. Throws FormatError naming `url` for a body that is not such a resource.
ListingPage parse_objects_page(std::string_view body, const std::string& url);

}  // namespace tensorstream::gcs
