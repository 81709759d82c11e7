#pragma once
// The request targets of the Blob service REST API that AzureStore uses, and the parsing of
// List Blobs pages.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/bucket_listing.hpp"

namespace tensorstream::azure {

/// The x-ms-version requests are sent with: the newest Azurite 3.35 serves.
inline constexpr std::string_view api_version = "2025-05-05";

/// "/CONTAINER/NAME", the blob's name percent-encoded but for '/'.
std::string blob_target(const std::string& container, std::string_view name);

/// The target of a List Blobs page of the names starting with `prefix`, grouped at '/' when
/// `delimited`, at most `max_results` entries, continuing at `marker` when given.
std::string list_blobs_target(const std::string& container, const std::string& prefix,
                              bool delimited, std::uint32_t max_results,
                              const std::optional<std::string>& marker);

/// Parses a List Blobs page (EnumerationResults). Names Azure sent percent-encoded
/// (`Encoded="true"`, for characters XML cannot carry) are decoded. Throws FormatError naming
/// `url` for a body that is not one, an entry without Name or with a bad Content-Length.
ListingPage parse_blob_list(std::string_view body, const std::string& url);

}  // namespace tensorstream::azure
