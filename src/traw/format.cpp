#include "tensorstream/traw/format.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "tensorstream/error.hpp"

namespace tensorstream::traw {
namespace {

constexpr std::array<std::byte, 4> magic{std::byte{'T'}, std::byte{'R'}, std::byte{'A'},
                                         std::byte{'W'}};
constexpr std::uint32_t format_version = 1;

// Offsets of the fixed fields; the dims follow ndim, then come the dtype code and data_size.
constexpr std::size_t version_offset = 4;
constexpr std::size_t ndim_offset = 8;
constexpr std::size_t dims_offset = 12;

struct CodeEntry {
  Dtype dtype;
  std::uint32_t code;
};

// Indexed by the enum's value. 1-4 are the format's codes; ours start at 101 so that a later
// version of the format can add codes above 4 without meeting them.
constexpr std::array<CodeEntry, 12> code_table{{
    {Dtype::F64, 4},
    {Dtype::F32, 3},
    {Dtype::F16, 1},
    {Dtype::BF16, 2},
    {Dtype::I64, 105},
    {Dtype::I32, 104},
    {Dtype::I16, 103},
    {Dtype::I8, 101},
    {Dtype::U8, 102},
    {Dtype::BOOL, 106},
    {Dtype::F8_E5M2, 108},
    {Dtype::F8_E4M3, 107},
}};

constexpr bool table_matches_enum() {
  for (std::size_t i = 0; i < code_table.size(); ++i) {
    if (static_cast<std::size_t>(code_table[i].dtype) != i) return false;
  }
  return true;
}
static_assert(table_matches_enum());

constexpr std::uint64_t header_size_of(std::uint64_t ndim) { return 24 + 8 * ndim; }

template <typename T>
T load_le(std::span<const std::byte> bytes, std::size_t offset) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<T>(bytes[offset + i]) << (8 * i));
  }
  return value;
}

template <typename T>
void append_le(std::vector<std::byte>& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<std::byte>(value >> (8 * i)));
}

std::string shape_string(std::span<const std::uint64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// Printable ASCII as itself, anything else as \xNN, so a binary magic reads unambiguously.
std::string quoted_bytes(std::span<const std::byte> bytes) {
  std::string out = "'";
  for (const auto byte : bytes) {
    const auto c = static_cast<unsigned char>(byte);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out + "'";
}

// The checks the reader and the writer share, so that whatever one writes the other reads.
std::optional<std::string> ndim_problem(std::uint64_t ndim) {
  if (ndim > 0 && ndim <= max_ndim) return std::nullopt;
  return "ndim is " + std::to_string(ndim) + ", expected 1 to " + std::to_string(max_ndim);
}

std::optional<std::string> dims_problem(std::span<const std::uint64_t> shape) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      return "shape[" + std::to_string(i) + "] is 0, expected > 0";
    }
  }
  return std::nullopt;
}

// numel × element size, or nullopt when that does not fit 64 bits (a wrapped product could
// otherwise match a small data_size).
std::optional<std::uint64_t> checked_data_size(std::span<const std::uint64_t> shape, Dtype dtype) {
  std::uint64_t size = element_size(dtype);
  for (const auto dim : shape) {
    if (__builtin_mul_overflow(size, dim, &size)) return std::nullopt;
  }
  return size;
}

std::string overflow_problem(Dtype dtype) {
  return "numel * element size (" + std::to_string(element_size(dtype)) + " for " +
         std::string(dtype_name(dtype)) + ") overflows 64 bits";
}

class HeaderParser {
 public:
  HeaderParser(std::span<const std::byte> prefix, std::uint64_t object_size,
               std::string_view object)
      : prefix_(prefix), object_size_(object_size), object_(object) {}

  Header parse() {
    require_fixed_field("magic", 0, magic.size());
    const auto found_magic = prefix_.first(magic.size());
    if (!std::equal(found_magic.begin(), found_magic.end(), magic.begin())) {
      fail("not a TRAW file (magic is " + quoted_bytes(found_magic) + ", expected 'TRAW')");
    }
    require_fixed_field("version", version_offset, 4);
    const auto version = load_le<std::uint32_t>(prefix_, version_offset);
    if (version != format_version) {
      fail_header("version is " + std::to_string(version) + ", expected " +
                  std::to_string(format_version));
    }
    require_fixed_field("ndim", ndim_offset, 4);
    const auto ndim = load_le<std::uint32_t>(prefix_, ndim_offset);
    if (const auto problem = ndim_problem(ndim)) fail_header(*problem);
    const auto header_size = header_size_of(ndim);
    require_header(ndim, header_size);

    Header header;
    header.shape.reserve(ndim);
    for (std::size_t i = 0; i < ndim; ++i) {
      header.shape.push_back(load_le<std::uint64_t>(prefix_, dims_offset + 8 * i));
    }
    if (const auto problem = dims_problem(header.shape)) {
      fail_header(*problem + " (shape " + shape_string(header.shape) + ")");
    }
    const auto code_offset = dims_offset + 8 * ndim;
    const auto code = load_le<std::uint32_t>(prefix_, code_offset);
    const auto dtype = dtype_of_code(code);
    if (!dtype) {
      fail_header("dtype code " + std::to_string(code) + " is unknown (known: 1-4, 101-108)");
    }
    header.dtype = *dtype;
    header.data_size = load_le<std::uint64_t>(prefix_, code_offset + 4);
    check_data_size(header);
    check_object_size(header);
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& detail) const {
    throw FormatError(std::string(object_) + ": " + detail);
  }

  [[noreturn]] void fail_header(const std::string& detail) const {
    fail("invalid TRAW header: " + detail);
  }

  // Before ndim is known, each fixed field is checked as it is reached.
  void require_fixed_field(std::string_view field, std::size_t offset, std::size_t size) const {
    if (offset + size > object_size_) {
      fail("truncated TRAW header: the object is " + std::to_string(object_size_) +
           " bytes, too short for the " + std::string(field) + " at offset " +
           std::to_string(offset) + " (" + std::to_string(size) + " bytes)");
    }
    require_prefix(offset + size);
  }

  void require_header(std::uint32_t ndim, std::uint64_t header_size) const {
    if (header_size > object_size_) {
      fail("truncated TRAW header: the object is " + std::to_string(object_size_) +
           " bytes, too short for the " + std::to_string(header_size) + "-byte header of ndim " +
           std::to_string(ndim));
    }
    require_prefix(header_size);
  }

  // The object holds the bytes, but the caller did not pass them: its mistake, not the file's.
  void require_prefix(std::uint64_t size) const {
    if (size > prefix_.size()) {
      throw InvalidArgument(std::string(object_) + ": parsing its TRAW header needs its first " +
                            std::to_string(size) + " bytes, but only " +
                            std::to_string(prefix_.size()) +
                            " were given (read min(object size, max_header_size))");
    }
  }

  void check_data_size(const Header& header) const {
    const auto expected = checked_data_size(header.shape, header.dtype);
    if (!expected) {
      fail_header("shape " + shape_string(header.shape) + ": " + overflow_problem(header.dtype));
    }
    if (header.data_size != *expected) {
      fail_header("data_size is " + std::to_string(header.data_size) + ", but shape " +
                  shape_string(header.shape) + " of " + std::string(dtype_name(header.dtype)) +
                  " needs " + std::to_string(*expected) + " bytes");
    }
  }

  // Compared by subtraction: header size + data_size may not fit 64 bits.
  void check_object_size(const Header& header) const {
    const auto header_size = header.header_size();
    const auto present = object_size_ - header_size;
    const auto declared = "the " + std::to_string(header_size) + "-byte header declares " +
                          std::to_string(header.data_size) + " bytes of data";
    if (present < header.data_size) {
      fail("truncated TRAW object: " + std::to_string(object_size_) + " bytes, but " + declared +
           " (" + std::to_string(header.data_size - present) + " missing)");
    }
    if (present > header.data_size) {
      fail("invalid TRAW object: " + std::to_string(object_size_) + " bytes, " +
           std::to_string(present - header.data_size) + " bytes after the data (" + declared + ")");
    }
  }

  std::span<const std::byte> prefix_;
  std::uint64_t object_size_;
  std::string_view object_;
};

}  // namespace

std::uint32_t dtype_code(Dtype dtype) {
  return code_table.at(static_cast<std::size_t>(dtype)).code;
}

std::optional<Dtype> dtype_of_code(std::uint32_t code) {
  for (const auto& entry : code_table) {
    if (entry.code == code) return entry.dtype;
  }
  return std::nullopt;
}

std::uint64_t Header::header_size() const { return header_size_of(shape.size()); }

Header parse_header(std::span<const std::byte> prefix, std::uint64_t object_size,
                    std::string_view object) {
  if (prefix.size() > object_size) {
    throw InvalidArgument(std::string(object) + ": " + std::to_string(prefix.size()) +
                          " bytes were given as the start of an object of " +
                          std::to_string(object_size) + " bytes");
  }
  return HeaderParser(prefix, object_size, object).parse();
}

std::vector<std::byte> encode_header(std::span<const std::uint64_t> shape, Dtype dtype) {
  const auto invalid = [&](const std::string& detail) {
    return InvalidArgument("invalid TRAW shape " + shape_string(shape) + ": " + detail);
  };
  if (const auto problem = ndim_problem(shape.size())) throw invalid(*problem);
  if (const auto problem = dims_problem(shape)) throw invalid(*problem);
  const auto data_size = checked_data_size(shape, dtype);
  if (!data_size) throw invalid(overflow_problem(dtype));

  std::vector<std::byte> out(magic.begin(), magic.end());
  out.reserve(header_size_of(shape.size()));
  append_le(out, format_version);
  append_le(out, static_cast<std::uint32_t>(shape.size()));
  for (const auto dim : shape) append_le(out, dim);
  append_le(out, dtype_code(dtype));
  append_le(out, *data_size);
  return out;
}

}  // namespace tensorstream::traw
