#pragma once
// How long to wait before retrying a request.

#include <chrono>

#include "tensorstream/storage/http_options.hpp"

namespace tensorstream {

/// The pause before retry number `retry` (1 for the first): uniform in [0, cap] where the cap
/// is retry_base_delay doubled for each earlier retry, at most retry_max_delay ("full jitter",
/// which spreads out clients that failed together).
std::chrono::milliseconds backoff_delay(const HttpOptions& options, int retry);

}  // namespace tensorstream
