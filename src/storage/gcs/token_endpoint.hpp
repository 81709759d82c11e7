#pragma once
// Requests for OAuth 2.0 access tokens: token endpoints (RFC 6749) and the metadata server,
// which answer in the same JSON.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// Sends `method url` (see tensorstream::endpoint_request) and reads the token of a 200 answer:
/// {"access_token": ..., "expires_in": seconds}. When `configured`, 408, 429, 5xx and network
/// failures are tried again (see tensorstream::endpoint_request). Throws CredentialsError(`provider`, cause,
/// `configured`) when no answer came, for another status (with the OAuth error and its
/// description when the body has them, e.g. "POST URL: HTTP 400 Bad Request: invalid_grant:
/// Invalid JWT Signature."), and for an answer without a token.
boost::asio::awaitable<AccessToken> request_token(
    boost::beast::http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, const std::string& provider, bool configured);

/// `fields` as an application/x-www-form-urlencoded body, e.g. "grant_type=refresh_token&...".
std::string form_encode(std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

/// POSTs the form-encoded `form` to the token endpoint `url`, as every OAuth 2.0 grant does;
/// see request_token. Failures are reported as configured.
boost::asio::awaitable<AccessToken> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider);

}  // namespace tensorstream::gcs
