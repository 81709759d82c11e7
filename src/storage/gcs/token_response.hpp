#pragma once
// The JSON answer of OAuth 2.0 token endpoints and of the metadata server.

#include <chrono>
#include <string>
#include <string_view>

#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// Reads {"access_token": ..., "expires_in": seconds} received at `now` from `url`. Throws
/// CredentialsError(`provider`, "malformed token response from URL: ...", `configured`) for a body
/// that is not such an object or whose token is empty.
AccessToken parse_token(std::string_view json, std::chrono::system_clock::time_point now,
                        const std::string& url, const std::string& provider, bool configured);

}  // namespace tensorstream::gcs
