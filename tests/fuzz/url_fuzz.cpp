// The input is an object URL as a user types it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto url = tensorstream::Url::parse(text);
    if (url.path.empty()) __builtin_trap();
    // A network URL prints back to text that parses to the same URL; requests rely on
    // str_with_query() naming the object that was opened, and messages on str() hiding no more
    // than its query.
    if (url.scheme == "file") return 0;
    const auto again = tensorstream::Url::parse(url.str_with_query());
    if (url.str() != tensorstream::redact_query(url.str_with_query())) __builtin_trap();
    if (again.scheme != url.scheme || again.host != url.host || again.port != url.port ||
        again.path != url.path || again.query != url.query) {
      __builtin_trap();
    }
  } catch (const tensorstream::InvalidArgument&) {
  }
  return 0;
}
