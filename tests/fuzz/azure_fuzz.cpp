// The input is what Azure sends or a user sets: a List Blobs page or an <Error> document, a
// connection string, or an Entra ID or managed identity token response.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/azure/blob_api.hpp"
#include "storage/azure/connection_string.hpp"
#include "storage/azure/error_body.hpp"
#include "storage/azure/token_response.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Documented never to throw: a body that is not an error document is nullopt.
  const auto error = tensorstream::azure::parse_error_body(text);
  if (error && error->code.empty()) __builtin_trap();
  try {
    tensorstream::azure::parse_blob_list(text, "az://fuzz/");
  } catch (const tensorstream::FormatError&) {
  }
  try {
    const auto parsed = tensorstream::azure::parse_connection_string(text, "fuzz");
    if (parsed.blob_endpoint.empty()) __builtin_trap();
  } catch (const tensorstream::InvalidArgument&) {
  }
  try {
    const tensorstream::TokenRequester who{"Azure", "fuzz", true};
    const auto token = tensorstream::azure::parse_token(text, std::chrono::system_clock::now(),
                                                        "http://fuzz/token", who);
    if (token.secret.empty()) __builtin_trap();
  } catch (const tensorstream::CredentialsError&) {
  }
  return 0;
}
