// The input is the JSON body of a Cloud Storage or token endpoint response: an object resource,
// a page of a listing, an error, or an OAuth 2.0 token.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/gcs/error_body.hpp"
#include "storage/gcs/json_api.hpp"
#include "storage/gcs/token_response.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const std::string url = "gs://fuzz/o";
  // Documented never to throw: a body without a message is nullopt.
  const auto message = tensorstream::gcs::error_message(body);
  if (message && message->empty()) __builtin_trap();
  try {
    tensorstream::gcs::parse_object_metadata(body, url);
  } catch (const tensorstream::FormatError&) {
  }
  try {
    tensorstream::gcs::parse_objects_page(body, url);
  } catch (const tensorstream::FormatError&) {
  }
  try {
    const auto token = tensorstream::gcs::parse_token(body, std::chrono::system_clock::now(), url,
                                                      "fuzz", true);
    if (token.value.empty()) __builtin_trap();
  } catch (const tensorstream::CredentialsError&) {
  }
  return 0;
}
