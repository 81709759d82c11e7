#pragma once
// Why one HTTP attempt failed. Attempts report failures as values rather than exceptions so the
// retry loop can decide what to do; HttpClient turns the last one into a public exception.

#include <boost/beast/http/fields.hpp>
#include <string>

namespace tensorstream {

/// The outcome of a failed attempt.
struct Failure {
  /// What went wrong, without the URL, e.g. "HTTP 503 Service Unavailable".
  std::string cause{};
  /// Trying again may succeed (timeouts, resets, truncated bodies, 408, 429, 5xx).
  bool transient = false;
  /// The object does not exist (HTTP 404).
  bool not_found = false;
  /// The connection died before any byte of the response arrived; on a reused keep-alive
  /// connection this means the server had closed it while idle, so the request never ran.
  bool before_response = false;
  /// The response header could not be parsed. On a reused keep-alive connection this usually
  /// means an earlier response left bytes behind (a body sent after a HEAD, say), not that the
  /// server answers this request with garbage.
  bool malformed = false;
  /// The HTTP status of an error response; 0 when none arrived.
  unsigned status = 0;
  /// The error response's body when it was short enough to read (S3 and GCS explain errors
  /// there); empty otherwise.
  std::string body{};
  /// The header of an error response, for services that explain errors there too (Azure's
  /// x-ms-error-code, the only explanation a HEAD response can carry); empty otherwise.
  boost::beast::http::fields headers{};
  /// The Location of a redirect (301, 302, 303, 307 or 308); empty for other responses.
  std::string location{};
  /// The target (path and query) of the request that failed, set before
  /// ServiceAdapter::interpret so that a service's messages can name what was asked for.
  std::string target{};
};

/// A failure that may go away when retried.
inline Failure transient_failure(std::string cause) {
  Failure failure;
  failure.cause = std::move(cause);
  failure.transient = true;
  return failure;
}

/// A failure that retrying cannot fix.
inline Failure permanent_failure(std::string cause) {
  Failure failure;
  failure.cause = std::move(cause);
  return failure;
}

}  // namespace tensorstream
