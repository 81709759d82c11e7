#pragma once
// What a cloud storage API adds to plain HTTP: credentials on every attempt of a request, and
// the meaning of its error bodies. S3 signs each attempt with SigV4; GCS sends a bearer token;
// Azure signs with Shared Key, sends a bearer token or adds a SAS token to the query.

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/http/failure.hpp"

namespace tensorstream {

/// The parts of one attempt of a request that credentials cover.
struct RequestHead {
  std::string_view method;  ///< "GET", "HEAD", "PUT", "POST" or "DELETE".
  std::string_view target;  ///< Origin-form target as sent: percent-encoded path and query.
  std::string_view host;    ///< Value of the Host header.
  /// Headers of this attempt besides Host, e.g. {"Range", "bytes=0-9"}.
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  /// Lowercase hex SHA-256 of the body, for signatures that cover it; empty when the request
  /// has no body or its hash is not known (S3 signs it as UNSIGNED-PAYLOAD).
  std::string_view payload_hash{};
};

/// What credentials add to one attempt of a request.
struct Authorization {
  std::string headers{};  ///< Header lines, "Name: value\r\n" each.
  /// Query parameters appended to the target ("sv=...&sig=..."), for credentials that travel in
  /// the URL; never logged.
  std::string query{};
  /// What a trace of the attempt (-vv) shows besides its method, URL and range, e.g. Azure's
  /// "x-ms-client-request-id 3f2a...", which support asks for.
  std::string trace{};
};

/// Hooks an HttpClient calls for a storage service.
class ServiceAdapter {
 public:
  virtual ~ServiceAdapter() = default;

  /// What to add to one attempt of `head`. Called on the
  /// requesting coroutine's executor before every attempt, retries included, so it may refresh
  /// expiring credentials and sign with the current time. Throws (e.g. CredentialsError) when no
  /// credentials can be had; the request then fails with that error.
  virtual boost::asio::awaitable<Authorization> authorize(const RequestHead& head) = 0;

  /// Rewrites the failure of an attempt that got an error status (failure.status != 0) from the
  /// service's error body (failure.body): a clearer cause, and whether a retry may help.
  virtual void interpret(Failure& failure) const = 0;
};

}  // namespace tensorstream
