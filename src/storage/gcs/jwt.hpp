#pragma once
// The JSON Web Token a service account signs to ask for an access token (RFC 7519, RFC 7523).

#include <chrono>
#include <string>
#include <string_view>

#include "storage/gcs/service_account_provider.hpp"
#include "storage/jwt.hpp"

namespace tensorstream::gcs {

/// The scope of the tokens tensorstream asks for: reading and writing objects, nothing else
/// (writers upload with the tokens reads use).
inline constexpr std::string_view read_write_scope =
    "https://www.googleapis.com/auth/devstorage.read_write";

/// How long a signed assertion is valid; Google accepts at most one hour.
inline constexpr std::chrono::seconds assertion_lifetime{3600};

/// "HEADER.CLAIMS.SIGNATURE" with header {"alg":"RS256","typ":"JWT"} (and "kid" when the key
/// has an id) and claims iss = the account, scope = `scope`, aud = the key's token URI, iat =
/// `now` and exp = `now` plus assertion_lifetime. Throws InvalidArgument as sign_rs256 does.
std::string service_account_assertion(const ServiceAccountKey& key, std::string_view scope,
                                      std::chrono::system_clock::time_point now);

}  // namespace tensorstream::gcs
