#include "storage/service_endpoint.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream {

ServiceEndpoint parse_service_endpoint(const std::string& text, const std::string& source,
                                       std::string_view what) {
  ServiceEndpoint endpoint;
  try {
    endpoint.origin = Url::parse(text);
  } catch (const InvalidArgument& error) {
    throw InvalidArgument(source + ": " + error.what());
  }
  if (endpoint.origin.scheme != "http" && endpoint.origin.scheme != "https") {
    throw InvalidArgument(source + " " + text + ": " + std::string(what) +
                          " must be http or https");
  }
  endpoint.path_prefix = endpoint.origin.path;
  while (!endpoint.path_prefix.empty() && endpoint.path_prefix.back() == '/') {
    endpoint.path_prefix.pop_back();
  }
  return endpoint;
}

}  // namespace tensorstream
