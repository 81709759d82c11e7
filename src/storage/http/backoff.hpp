#pragma once
// How long to wait before retrying a request.

#include <chrono>
#include <functional>

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

}  // namespace tensorstream
