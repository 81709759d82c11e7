#pragma once
// How long to wait before retrying a request.

#include <boost/beast/http/fields.hpp>
#include <chrono>
#include <functional>
#include <optional>

#include "tensorstream/storage/http_options.hpp"

namespace tensorstream {

/// Draws one backoff delay from [0, cap]. The retry loop takes it as a parameter so that tests
/// can see the caps and wait for nothing.
using Jitter = std::function<std::chrono::milliseconds(std::chrono::milliseconds cap)>;

/// Uniform in [0, cap] from a per-thread generator ("full jitter", which spreads out clients
/// that failed together).
std::chrono::milliseconds full_jitter(std::chrono::milliseconds cap);

/// The cap of the pause before retry number `retry` (1 for the first): retry_base_delay, or
/// throttle_base_delay after a throttling answer, doubled for each earlier retry, at most
/// retry_max_delay.
std::chrono::milliseconds backoff_cap(const HttpOptions& options, int retry, bool throttled);

/// The longest Retry-After honoured: a server asking for more is retried after this long.
inline constexpr std::chrono::minutes max_retry_after{5};

/// The pause a throttled or unavailable server (429, 503) asks for in its Retry-After header,
/// as delay-seconds or an HTTP date (RFC 9110 section 10.2.3) relative to `now`, at most
/// max_retry_after; nullopt when there is no such header or it is malformed.
std::optional<std::chrono::milliseconds> retry_after(const boost::beast::http::fields& response,
                                                     std::chrono::system_clock::time_point now);

}  // namespace tensorstream
