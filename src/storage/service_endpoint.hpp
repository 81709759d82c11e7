#pragma once
// The endpoint of an HTTP storage service as a user or the environment names it: GCS's JSON API,
// an Azure blob endpoint, the Hugging Face Hub.

#include <string>
#include <string_view>

#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// An endpoint's server and the path every request target starts with.
struct ServiceEndpoint {
  Url origin;               ///< As parsed; origin.origin() is "scheme://host[:port]".
  std::string path_prefix;  ///< The endpoint's path without trailing '/', often empty.
};

/// `text`, which `source` gave ("HF_ENDPOINT"), as the endpoint of `what` ("the Hub's
/// endpoint"). Throws InvalidArgument "SOURCE: why" for no URL, and "SOURCE TEXT: WHAT must be
/// http or https" for another scheme.
ServiceEndpoint parse_service_endpoint(const std::string& text, const std::string& source,
                                       std::string_view what);

}  // namespace tensorstream
