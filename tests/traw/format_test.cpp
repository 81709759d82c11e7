#include "tensorstream/traw/format.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "support/every_dtype.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream::traw {
namespace {

constexpr std::string_view kObject = "s3://b/TP2/shard0/x.bin";
const std::string kPrefix = std::string(kObject) + ": ";

// Header fields written exactly as given, valid or not, in the spec's layout.
class RawHeader {
 public:
  RawHeader& text(std::string_view text) {
    for (const char c : text) bytes_.push_back(static_cast<std::byte>(c));
    return *this;
  }
  RawHeader& u32(std::uint32_t value) { return little_endian(value, 4); }
  RawHeader& u64(std::uint64_t value) { return little_endian(value, 8); }
  std::vector<std::byte> bytes() const { return bytes_; }

 private:
  RawHeader& little_endian(std::uint64_t value, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i)
      bytes_.push_back(static_cast<std::byte>(value >> (8 * i)));
    return *this;
  }

  std::vector<std::byte> bytes_;
};

// A header with magic and version valid, then `ndim`, `dims`, `code` and `data_size` as given.
std::vector<std::byte> raw_header(std::uint32_t ndim, const std::vector<std::uint64_t>& dims,
                                  std::uint32_t code, std::uint64_t data_size) {
  RawHeader header;
  header.text("TRAW").u32(1).u32(ndim);
  for (const auto dim : dims) header.u64(dim);
  return header.u32(code).u64(data_size).bytes();
}

// What a reader fetches of an object of `object_size` bytes that starts with `bytes`: its first
// min(object size, max_header_size) bytes, in a buffer of exactly that size, so that a read past it
// is a heap overflow the sanitizer builds report.
std::vector<std::byte> prefix_of(std::span<const std::byte> bytes, std::uint64_t object_size) {
  const auto size = std::min<std::uint64_t>({bytes.size(), object_size, max_header_size});
  return std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
}

Header parse(std::span<const std::byte> bytes, std::uint64_t object_size) {
  return parse_header(prefix_of(bytes, object_size), object_size, kObject);
}

// The message of the FormatError (exactly that type) parsing the object throws.
std::string format_error(std::span<const std::byte> bytes, std::uint64_t object_size) {
  try {
    parse(bytes, object_size);
  } catch (const FormatError& e) {
    EXPECT_EQ(typeid(e), typeid(FormatError));
    return e.what();
  }
  ADD_FAILURE() << "no FormatError for an object of " << object_size << " bytes";
  return {};
}

std::string encode_error(const std::vector<std::uint64_t>& shape, Dtype dtype) {
  try {
    encode_header(shape, dtype);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

// ---- dtype codes ----

TEST(TrawDtypeCode, SeedCodesAndOurExtension) {
  const std::vector<std::tuple<Dtype, std::uint32_t>> table{
      {Dtype::F16, 1},   {Dtype::BF16, 2},   {Dtype::F32, 3},       {Dtype::F64, 4},
      {Dtype::I8, 101},  {Dtype::U8, 102},   {Dtype::I16, 103},     {Dtype::I32, 104},
      {Dtype::I64, 105}, {Dtype::BOOL, 106}, {Dtype::F8_E4M3, 107}, {Dtype::F8_E5M2, 108},
  };
  ASSERT_EQ(table.size(), testing::every_dtype.size());
  for (const auto& [dtype, code] : table) {
    EXPECT_EQ(dtype_code(dtype), code) << dtype_name(dtype);
    EXPECT_EQ(dtype_of_code(code), dtype) << code;
  }
}

TEST(TrawDtypeCode, UnknownCodesAreNullopt) {
  for (const std::uint32_t code : {0u, 5u, 100u, 109u, 0x10000u, 0xFFFFFFFFu}) {
    EXPECT_EQ(dtype_of_code(code), std::nullopt) << code;
  }
}

// ---- the seed's example and round trips ----

TEST(TrawHeader, EncodesTheSeedsExampleByteForByte) {
  // Shape (64128, 8192), bfloat16: the 40 bytes the seed's specification lists, field by field.
  const std::vector<unsigned char> expected{
      'T',  'R',  'A',  'W',                           // magic
      0x01, 0x00, 0x00, 0x00,                          // version 1
      0x02, 0x00, 0x00, 0x00,                          // ndim 2
      0x80, 0xFA, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 64128
      0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 8192
      0x02, 0x00, 0x00, 0x00,                          // dtype code 2, bfloat16
      0x00, 0x00, 0xA0, 0x3E, 0x00, 0x00, 0x00, 0x00,  // data_size 1050673152
  };
  const std::vector<std::uint64_t> shape{64128, 8192};
  const auto header = encode_header(shape, Dtype::BF16);
  ASSERT_EQ(header.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(header[i], static_cast<std::byte>(expected[i])) << "byte " << i;
  }
}

TEST(TrawHeader, ParsesTheSeedsExample) {
  const std::vector<std::uint64_t> shape{64128, 8192};
  const auto parsed = parse(encode_header(shape, Dtype::BF16), 1050673192);
  EXPECT_EQ(parsed, (Header{{64128, 8192}, Dtype::BF16, 1050673152}));
  EXPECT_EQ(parsed.header_size(), 40u);
}

TEST(TrawHeader, RoundTripsEveryDtypeAndRank) {
  const std::vector<std::vector<std::uint64_t>> shapes{
      {1}, {7}, {3, 5}, {2, 1, 4}, {2, 3, 1, 1, 2, 1, 1, 1, 1, 3}};
  for (const auto dtype : testing::every_dtype) {
    for (const auto& shape : shapes) {
      const auto bytes = encode_header(shape, dtype);
      ASSERT_EQ(bytes.size(), 24 + 8 * shape.size());
      std::uint64_t numel = 1;
      for (const auto dim : shape) numel *= dim;
      const Header expected{shape, dtype, numel * element_size(dtype)};
      EXPECT_EQ(parse(bytes, bytes.size() + expected.data_size), expected) << dtype_name(dtype);
    }
  }
}

TEST(TrawHeader, TheLargestHeaderIsMaxHeaderSize) {
  const std::vector<std::uint64_t> shape(max_ndim, 2);
  EXPECT_EQ(max_header_size, 104u);
  EXPECT_EQ(encode_header(shape, Dtype::U8).size(), max_header_size);
}

TEST(TrawHeader, ReadsOnlyTheHeaderFromAPrefixThatHoldsData) {
  // A reader's one range read of max_header_size bytes takes in the first data bytes too.
  const std::vector<std::uint64_t> shape{4, 16};
  auto object = encode_header(shape, Dtype::F32);
  object.resize(object.size() + 256, std::byte{0xAB});
  EXPECT_EQ(parse(object, object.size()), (Header{{4, 16}, Dtype::F32, 256}));
}

// ---- validation ----

TEST(TrawValidation, RejectsAnotherFormatsMagic) {
  const auto zip = RawHeader().text("PK\x03\x04").u32(1).u32(1).u64(1).u32(102).u64(1).bytes();
  EXPECT_EQ(format_error(zip, 33),
            kPrefix + "not a TRAW file (magic is 'PK\\x03\\x04', expected 'TRAW')");
  const auto lower = RawHeader().text("traw").u32(1).u32(1).u64(1).u32(102).u64(1).bytes();
  EXPECT_EQ(format_error(lower, 33),
            kPrefix + "not a TRAW file (magic is 'traw', expected 'TRAW')");
  const auto quotes = RawHeader().text("'\\\xff").u32(0).bytes();
  EXPECT_EQ(format_error(quotes, 100),
            kPrefix + "not a TRAW file (magic is '\\x27\\x5c\\xff\\x00', expected 'TRAW')");
}

TEST(TrawValidation, RejectsVersionsOtherThanOne) {
  for (const std::uint32_t version : {0u, 2u, 0x01000000u}) {
    const auto bytes = RawHeader().text("TRAW").u32(version).u32(1).u64(1).u32(102).u64(1).bytes();
    EXPECT_EQ(format_error(bytes, 33), kPrefix + "invalid TRAW header: version is " +
                                           std::to_string(version) + ", expected 1");
  }
}

TEST(TrawValidation, RejectsNdimOutsideOneToTen) {
  EXPECT_EQ(format_error(raw_header(0, {}, 3, 4), 1000),
            kPrefix + "invalid TRAW header: ndim is 0, expected 1 to 10");
  const std::vector<std::uint64_t> eleven(11, 1);
  EXPECT_EQ(format_error(raw_header(11, eleven, 102, 1), 1000),
            kPrefix + "invalid TRAW header: ndim is 11, expected 1 to 10");
  EXPECT_EQ(format_error(raw_header(0xFFFFFFFF, {}, 3, 4), 1000),
            kPrefix + "invalid TRAW header: ndim is 4294967295, expected 1 to 10");
}

TEST(TrawValidation, RejectsAZeroDimensionNamingIt) {
  EXPECT_EQ(format_error(raw_header(3, {4, 0, 2}, 3, 0), 48),
            kPrefix + "invalid TRAW header: shape[1] is 0, expected > 0 (shape [4, 0, 2])");
  EXPECT_EQ(format_error(raw_header(1, {0}, 3, 0), 32),
            kPrefix + "invalid TRAW header: shape[0] is 0, expected > 0 (shape [0])");
}

TEST(TrawValidation, RejectsUnknownDtypeCodes) {
  for (const std::uint32_t code : {0u, 5u, 100u, 109u}) {
    EXPECT_EQ(format_error(raw_header(1, {4}, code, 16), 48),
              kPrefix + "invalid TRAW header: dtype code " + std::to_string(code) +
                  " is unknown (known: 1-4, 101-108)");
  }
}

TEST(TrawValidation, RejectsDataSizeOtherThanNumelTimesElementSize) {
  EXPECT_EQ(
      format_error(raw_header(2, {2, 3}, 3, 25), 65),
      kPrefix + "invalid TRAW header: data_size is 25, but shape [2, 3] of F32 needs 24 bytes");
  EXPECT_EQ(
      format_error(raw_header(2, {2, 3}, 3, 0), 40),
      kPrefix + "invalid TRAW header: data_size is 0, but shape [2, 3] of F32 needs 24 bytes");
  EXPECT_EQ(format_error(raw_header(1, {5}, 105, 5), 37),
            kPrefix + "invalid TRAW header: data_size is 5, but shape [5] of I64 needs 40 bytes");
}

TEST(TrawValidation, RejectsByteSizesThatOverflowInsteadOfWrapping) {
  // Each product wraps to 0 in 64 bits, which the data_size of 0 would match without the check.
  const std::vector<std::tuple<std::vector<std::uint64_t>, Dtype, std::string>> cases{
      {{1ull << 32, 1ull << 32},
       Dtype::U8,
       "[4294967296, 4294967296]: numel * element size (1 for U8)"},
      {{1ull << 63}, Dtype::BF16, "[9223372036854775808]: numel * element size (2 for BF16)"},
      {{1ull << 21, 1ull << 21, 1ull << 21},
       Dtype::F64,
       "[2097152, 2097152, 2097152]: numel * element size (8 for F64)"},
  };
  for (const auto& [shape, dtype, problem] : cases) {
    const auto header = raw_header(shape.size(), shape, dtype_code(dtype), 0);
    EXPECT_EQ(format_error(header, header.size()),
              kPrefix + "invalid TRAW header: shape " + problem + " overflows 64 bits");
  }
}

// Objects of every size around a header of shape [2, 3], F32: 40 bytes, then 24 of data.
TEST(TrawValidation, RejectsAnObjectThatIsNotHeaderPlusData) {
  const auto header = raw_header(2, {2, 3}, 3, 24);
  const std::vector<std::tuple<std::uint64_t, std::string>> cases{
      {0,
       "truncated TRAW header: the object is 0 bytes, too short for the magic at offset 0 "
       "(4 bytes)"},
      {7,
       "truncated TRAW header: the object is 7 bytes, too short for the version at offset 4 "
       "(4 bytes)"},
      {11,
       "truncated TRAW header: the object is 11 bytes, too short for the ndim at offset 8 "
       "(4 bytes)"},
      {39,
       "truncated TRAW header: the object is 39 bytes, too short for the 40-byte header of "
       "ndim 2"},
      {40,
       "truncated TRAW object: 40 bytes, but the 40-byte header declares 24 bytes of data "
       "(24 missing)"},
      {63,
       "truncated TRAW object: 63 bytes, but the 40-byte header declares 24 bytes of data "
       "(1 missing)"},
      {72,
       "invalid TRAW object: 72 bytes, 8 bytes after the data (the 40-byte header declares "
       "24 bytes of data)"},
      {~0ull,
       "invalid TRAW object: 18446744073709551615 bytes, 18446744073709551551 bytes after "
       "the data (the 40-byte header declares 24 bytes of data)"},
  };
  for (const auto& [size, message] : cases) {
    EXPECT_EQ(format_error(header, size), kPrefix + message);
  }
  EXPECT_NO_THROW(parse(header, 64));
}

TEST(TrawValidation, ComparesTheObjectSizeWithoutOverflow) {
  // 2^64 - 1 one-byte elements: the byte size fits 64 bits, header size + byte size does not.
  const auto bytes = raw_header(1, {~0ull}, dtype_code(Dtype::U8), ~0ull);
  EXPECT_EQ(format_error(bytes, ~0ull),
            kPrefix +
                "truncated TRAW object: 18446744073709551615 bytes, but the 32-byte header "
                "declares 18446744073709551615 bytes of data (32 missing)");
}

TEST(TrawValidation, EveryTruncationIsAFormatError) {
  // Six F32 elements, 24 bytes of data, after a 40-byte header and after the largest one.
  const std::vector<std::uint64_t> rank_2{2, 3};
  const std::vector<std::uint64_t> rank_10{1, 1, 1, 1, 1, 1, 1, 1, 2, 3};
  for (const auto& shape : {rank_2, rank_10}) {
    auto object = encode_header(shape, Dtype::F32);
    const auto header_size = object.size();
    object.resize(object.size() + 24, std::byte{0x5A});
    for (std::size_t size = 0; size < object.size(); ++size) {
      const auto message = format_error(object, size);
      const auto expected =
          size < header_size ? "truncated TRAW header: " : "truncated TRAW object: ";
      EXPECT_TRUE(message.starts_with(kPrefix + expected)) << size << ": " << message;
    }
    EXPECT_NO_THROW(parse(object, object.size()));
  }
}

TEST(TrawValidation, APrefixShorterThanTheHeaderIsTheCallersMistake) {
  const auto header = raw_header(2, {2, 3}, 3, 24);
  const std::span<const std::byte> first_12(header.data(), 12);
  try {
    parse_header(first_12, 64, kObject);
    FAIL() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              kPrefix +
                  "parsing its TRAW header needs its first 40 bytes, but only 12 were given "
                  "(read min(object size, max_header_size))");
  }
  try {
    parse_header(header, 39, kObject);
    FAIL() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              kPrefix + "40 bytes were given as the start of an object of 39 bytes");
  }
}

// ---- encoding ----

TEST(TrawEncode, RejectsShapesNoReaderAccepts) {
  EXPECT_EQ(encode_error({}, Dtype::F32), "invalid TRAW shape []: ndim is 0, expected 1 to 10");
  EXPECT_EQ(encode_error(std::vector<std::uint64_t>(11, 1), Dtype::F32),
            "invalid TRAW shape [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]: ndim is 11, expected 1 to 10");
  EXPECT_EQ(encode_error({3, 0}, Dtype::F32),
            "invalid TRAW shape [3, 0]: shape[1] is 0, expected > 0");
  EXPECT_EQ(encode_error({1ull << 62, 2}, Dtype::F32),
            "invalid TRAW shape [4611686018427387904, 2]: numel * element size (4 for F32) "
            "overflows 64 bits");
}

}  // namespace
}  // namespace tensorstream::traw
