#pragma once
// Requests to OAuth 2.0 token endpoints (RFC 6749) and the metadata servers that answer like
// them, whatever the cloud: each parses the token of the answer in its own dialect.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream {

/// Who asks for a token, as its errors name it: CredentialsError(service, provider, cause,
/// configured).
struct TokenRequester {
  std::string service;   ///< "Google", "Azure".
  std::string provider;  ///< The provider's name, e.g. "workload identity".
  bool configured;       ///< Whether a failure stops a chain (see CredentialsError).

  /// The error `cause`, from this requester.
  CredentialsError error(std::string cause) const {
    return CredentialsError(service, provider, std::move(cause), configured);
  }

  /// The error for a 200 answer of `url` without a usable token: "malformed token response
  /// from URL: WHAT". Inline, so that the parsers link without the network code (tests/fuzz).
  CredentialsError malformed(const std::string& url, const std::string& what) const {
    return error("malformed token response from " + url + ": " + what);
  }
};

/// Sends `method url` (see tensorstream::endpoint_request) and returns the body of a 200 answer.
/// When `who` is configured, 408, 429, 5xx and network failures are tried again. Throws `who`'s
/// CredentialsError when no answer came, or for another status, with the OAuth error and its
/// description when the body has them (RFC 6749, section 5.2), e.g. "POST URL: HTTP 400 Bad
/// Request: invalid_grant: Invalid JWT Signature.".
boost::asio::awaitable<std::string> request_token_body(
    boost::beast::http::verb method, std::string url,
    std::vector<std::pair<std::string, std::string>> headers, std::string body,
    std::chrono::milliseconds timeout, TokenRequester who);

/// `fields` as an application/x-www-form-urlencoded body or query, e.g.
/// "grant_type=refresh_token&...".
std::string form_encode(
    std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

}  // namespace tensorstream
