#pragma once
// Requests for Entra ID access tokens: the token endpoint of a tenant, and the managed identity
// endpoints, which answer in nearly the same JSON.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/oauth_token.hpp"
#include "tensorstream/storage/azure/credentials.hpp"

namespace tensorstream::azure {

/// Where Entra ID issues tokens when AZURE_AUTHORITY_HOST does not say otherwise.
inline constexpr std::string_view default_authority_host = "https://login.microsoftonline.com";

/// The clouds' message prefix for Azure credentials ("Azure credentials from ...").
inline constexpr std::string_view credentials_service = "Azure";

/// The authority host: AZURE_AUTHORITY_HOST (https:// added when it names no scheme, as for
/// "login.microsoftonline.us"; a trailing '/' dropped), else default_authority_host.
std::string authority_host();

/// The token endpoint of `tenant`: "{authority_host()}/{tenant}/oauth2/v2.0/token".
std::string token_url(const std::string& tenant);

/// The client credentials grant's form for a token to Blob Storage: grant_type, client_id, scope
/// storage_scope, and `credential` ({"client_secret", S} or the client assertion's two fields).
std::string client_credentials_form(
    const std::string& client_id,
    std::initializer_list<std::pair<std::string_view, std::string_view>> credential);

/// Sends `method url` and reads the bearer token of a 200 answer (see parse_token). Throws
/// Azure's CredentialsError(`provider`, cause, `configured`) as tensorstream::request_token_body
/// does, e.g. "POST URL: HTTP 401 Unauthorized: invalid_client: AADSTS7000215: Invalid client
/// secret provided...", and for an answer without a token.
boost::asio::awaitable<Credentials> request_token(
    boost::beast::http::verb method, std::string url,
    std::vector<std::pair<std::string, std::string>> headers, std::string body,
    std::chrono::milliseconds timeout, std::string provider, bool configured);

/// POSTs the form-encoded `form` to the token endpoint `url`; failures are reported as
/// configured.
boost::asio::awaitable<Credentials> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider);

}  // namespace tensorstream::azure
