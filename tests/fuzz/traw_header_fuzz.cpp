// The input is a whole TRAW object: header, then data. The parser gets what a reader fetches, the
// first min(object size, max_header_size) bytes, in a buffer of exactly that size, so reading past
// them is a heap overflow that ASan reports.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tensorstream/error.hpp"
#include "tensorstream/traw/format.hpp"

namespace traw = tensorstream::traw;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  const std::vector<std::byte> prefix(bytes, bytes + std::min(size, traw::max_header_size));
  traw::Header header;
  try {
    header = traw::parse_header(prefix, size, "fuzz");
  } catch (const tensorstream::FormatError& e) {
    if (!std::string_view(e.what()).starts_with("fuzz: ")) __builtin_trap();
    return 0;
  }
  // An accepted header accounts for every byte of the object, and it is exactly what the writer
  // encodes for its shape and dtype: reader and writer agree on every file either accepts.
  const auto header_size = header.header_size();
  if (header_size > size || size - header_size != header.data_size) __builtin_trap();
  const auto encoded = traw::encode_header(header.shape, header.dtype);
  if (!std::equal(encoded.begin(), encoded.end(), prefix.begin(), prefix.begin() + header_size) ||
      encoded.size() != header_size) {
    __builtin_trap();
  }
  // The header alone is enough to parse it again.
  const std::vector<std::byte> header_only(prefix.begin(), prefix.begin() + header_size);
  if (traw::parse_header(header_only, size, "fuzz") != header) __builtin_trap();
  return 0;
}
