#pragma once
/// @file
/// AWS Signature Version 4 (header authorization), for S3 and the other AWS services we call.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// A header name and value, as sent.
using HeaderField = std::pair<std::string, std::string>;

/// The payload hash S3 accepts in place of the body's SHA-256.
inline constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";

/// The SHA-256 of an empty payload, in lowercase hex.
inline constexpr std::string_view empty_payload_hash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A request to sign. Path and query are given decoded; the signer encodes them.
struct SigningRequest {
  std::string method = "GET";  ///< HTTP method, upper case.
  std::string host;            ///< Value of the Host header, with ":port" when not the default.
  std::string path = "/";      ///< Decoded path, starting with '/', e.g. "/bucket/my key+1".
  std::vector<HeaderField> query;   ///< Decoded query parameters, in any order.
  /// Headers to sign besides host, x-amz-date, x-amz-content-sha256 and x-amz-security-token,
  /// e.g. {"Range", "bytes=0-9"}. Names in any case.
  std::vector<HeaderField> headers;
  /// Lowercase hex SHA-256 of the body, or unsigned_payload.
  std::string payload_hash{empty_payload_hash};
  std::chrono::system_clock::time_point time;  ///< When the request is made.
  std::string region = "us-east-1";            ///< e.g. "eu-west-1".
  std::string service = "s3";                  ///< e.g. "s3", "sts".
};

/// The outcome of signing, with the intermediate texts that S3 echoes back in
/// SignatureDoesNotMatch errors, so that a mismatch can be diagnosed.
struct SignedRequest {
  /// Headers to add to the request: x-amz-date, x-amz-content-sha256 (service "s3" only, which
  /// requires it), x-amz-security-token (with a session token) and Authorization.
  std::vector<HeaderField> headers;
  std::string canonical_request;  ///< The canonical request that was hashed.
  std::string string_to_sign;     ///< The string the signing key signed.
  std::string signature;          ///< Lowercase hex HMAC-SHA256.
};

/// Signs `request` with `credentials`.
SignedRequest sign(const SigningRequest& request, const Credentials& credentials);

/// Percent-encodes every byte of `text` outside A-Za-z0-9-._~ as %XY (upper case hex), leaving
/// '/' as is when `keep_slash`: the URI encoding of SigV4 and of S3 object keys.
std::string uri_encode(std::string_view text, bool keep_slash);

/// Lowercase hex SHA-256 of `payload`, for SigningRequest::payload_hash.
std::string payload_hash(std::string_view payload);

/// `time` in the ISO 8601 basic format of x-amz-date, e.g. "20150830T123600Z".
std::string amz_date(std::chrono::system_clock::time_point time);

}  // namespace tensorstream::s3
