#pragma once
// The JSON answer of the Entra ID token endpoint and of the managed identity endpoints, which
// say when a token expires in their own ways.

#include <chrono>
#include <string>
#include <string_view>

#include "storage/oauth_token.hpp"
#include "tensorstream/storage/azure/credentials.hpp"

namespace tensorstream::azure {

/// Reads the bearer token of `json`, received at `now` from `url`: {"access_token": ...} with
/// its lifetime as "expires_in" (seconds; Entra ID sends a number, IMDS a decimal string) or
/// else "expires_on" (epoch seconds, a number or a string, as App Service sends it). Throws
/// `who`'s "malformed token response from URL: ..." for a body that is not such an object, an
/// empty token, or a token without a lifetime (kept forever, it would outlive itself).
Credentials parse_token(std::string_view json, std::chrono::system_clock::time_point now,
                        const std::string& url, const TokenRequester& who);

}  // namespace tensorstream::azure
