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

/// The target of an object's size and generation:
/// "/storage/v1/b/BUCKET/o/NAME?fields=size%2Cgeneration", with bucket and name percent-encoded,
/// '/' included.
std::string metadata_target(std::string_view bucket, std::string_view name);

/// The target of an object's bytes: "/storage/v1/b/BUCKET/o/NAME?alt=media", followed by
/// "&ifGenerationMatch=GENERATION" when `generation` is not empty, so that GCS answers 412
/// once the object has another generation.
std::string media_target(std::string_view bucket, std::string_view name,
                         std::string_view generation = {});

/// The target of one page of the objects whose names start with `prefix`, grouped at '/' when
/// `delimited`, continuing at `page_token` when given; only names and sizes are asked for.
std::string list_target(std::string_view bucket, std::string_view prefix, bool delimited,
                        const std::optional<std::string>& page_token);

/// What GcsStore reads of an object resource.
struct ObjectMetadata {
  std::uint64_t size = 0;  ///< "size", a decimal string in the resource.
  std::string generation;  ///< "generation", a decimal string; empty when absent.
};

/// The "size" and "generation" of an object resource. Throws FormatError naming `url` for a
/// body without a size, or with a generation that is not a decimal number.
ObjectMetadata parse_object_metadata(std::string_view body, const std::string& url);

/// Parses an objects resource ({"items": [{"name", "size"}...], "nextPageToken"}); "prefixes"
/// are ignored. Throws FormatError naming `url` for a body that is not such a resource.
ListingPage parse_objects_page(std::string_view body, const std::string& url);

}  // namespace tensorstream::gcs
