#pragma once
// Requests for OAuth 2.0 access tokens: token endpoints (RFC 6749) and the metadata server,
// which answer in the same JSON.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "storage/oauth_token.hpp"
#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// Sends `method url` and reads the token of a 200 answer: {"access_token": ..., "expires_in":
/// seconds}. Throws Google's CredentialsError(`provider`, cause, `configured`) as
/// tensorstream::request_token_body does, and for an answer without a token.
boost::asio::awaitable<AccessToken> request_token(
    boost::beast::http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, const std::string& provider, bool configured);

/// POSTs the form-encoded `form` to the token endpoint `url`, as every OAuth 2.0 grant does;
/// see request_token. Failures are reported as configured.
boost::asio::awaitable<AccessToken> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider);

}  // namespace tensorstream::gcs
