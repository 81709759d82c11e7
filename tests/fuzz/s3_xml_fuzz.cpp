// The input is the XML body of an S3 response: a ListObjectsV2 page or an <Error> document.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/s3/error_document.hpp"
#include "storage/s3/list_objects.hpp"
#include "tensorstream/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  // Documented never to throw: a body that is not an error document is nullopt.
  const auto error = tensorstream::s3::parse_error_document(body);
  if (error && error->code.empty()) __builtin_trap();
  try {
    tensorstream::s3::parse_list_objects(body, "s3://fuzz/");
  } catch (const tensorstream::FormatError&) {
  }
  return 0;
}
