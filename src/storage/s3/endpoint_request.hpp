#pragma once
// Requests of the AWS credential providers to their endpoints (instance metadata, container
// agent, STS), failing with CredentialsError.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "storage/http/endpoint_request.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {

/// tensorstream::endpoint_request, with three attempts for a `configured` source and one for a
/// probed one, and a request that gets no response reported as AWS CredentialsError(`provider`,
/// cause naming the URL, `configured`).
boost::asio::awaitable<EndpointResponse> endpoint_request(
    boost::beast::http::verb method, const std::string& url, const std::vector<HeaderField>& headers,
    const std::string& body, std::chrono::milliseconds timeout, const std::string& provider,
    bool configured);

}  // namespace tensorstream::s3
