#include "tensorstream/safetensors/header.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "safetensors/test_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/safetensors/dtype.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kObject = "m.safetensors";
const std::string kPrefix = "invalid safetensors header in m.safetensors: ";

// Parses `json` as the header of an object whose data region is `data_size` bytes.
Header parse(std::string_view json, std::uint64_t data_size = 1024) {
  return parse_header(json, 8 + json.size() + data_size, kObject);
}

// The message of the FormatError (exactly that type) parsing `json` throws.
std::string format_error(std::string_view json, std::uint64_t data_size = 1024) {
  try {
    parse(json, data_size);
  } catch (const FormatError& e) {
    EXPECT_EQ(typeid(e), typeid(FormatError));
    return e.what();
  }
  ADD_FAILURE() << "no FormatError for " << json;
  return {};
}

std::array<std::byte, 8> little_endian(std::uint64_t value) {
  std::array<std::byte, 8> bytes;
  for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<std::byte>(value >> (8 * i));
  return bytes;
}

std::string length_error(std::uint64_t length, std::uint64_t object_size) {
  try {
    parse_header_length(little_endian(length), object_size, kObject);
  } catch (const FormatError& e) {
    EXPECT_EQ(typeid(e), typeid(FormatError));
    return e.what();
  }
  ADD_FAILURE() << "no FormatError for length " << length;
  return {};
}

// A valid tensor entry with the given fields spliced in, e.g. entry(R"("dtype":"F32")", ...).
std::string tensor_json(std::string_view name, std::string_view dtype, std::string_view shape,
                        std::string_view offsets) {
  return "\"" + std::string(name) + "\":{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":" +
         std::string(shape) + ",\"data_offsets\":" + std::string(offsets) + "}";
}

std::string one_tensor(std::string_view dtype, std::string_view shape, std::string_view offsets) {
  return "{" + tensor_json("w", dtype, shape, offsets) + "}";
}

// ---- dtype table ----

TEST(Dtype, TableMapsEveryNameToItsEnumAndSize) {
  const std::vector<std::tuple<Dtype, std::string_view, std::size_t>> table{
      {Dtype::F64, "F64", 8},         {Dtype::F32, "F32", 4},         {Dtype::F16, "F16", 2},
      {Dtype::BF16, "BF16", 2},       {Dtype::I64, "I64", 8},         {Dtype::I32, "I32", 4},
      {Dtype::I16, "I16", 2},         {Dtype::I8, "I8", 1},           {Dtype::U8, "U8", 1},
      {Dtype::BOOL, "BOOL", 1},       {Dtype::F8_E5M2, "F8_E5M2", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1},
  };
  for (const auto& [dtype, name, size] : table) {
    EXPECT_EQ(parse_dtype(name), dtype) << name;
    EXPECT_EQ(dtype_name(dtype), name);
    EXPECT_EQ(element_size(dtype), size) << name;
  }
}

TEST(Dtype, UnknownNamesAreNullopt) {
  for (const std::string_view name : {"", "bf16", "F8", "FLOAT32", "BF16 ", "F8_E4M3FN", "U16",
                                      "U32", "U64", "Q4_K"}) {
    EXPECT_EQ(parse_dtype(name), std::nullopt) << name;
  }
}

// ---- the length prefix ----

TEST(HeaderLength, DecodesLittleEndian) {
  EXPECT_EQ(parse_header_length(little_endian(0x0210), 1000, kObject), 0x0210u);
}

TEST(HeaderLength, AcceptsHeaderEndingAtTheObjectsEnd) {
  EXPECT_EQ(parse_header_length(little_endian(100), 108, kObject), 100u);
}

TEST(HeaderLength, RejectsLengthOverTheLimit) {
  EXPECT_EQ(length_error(max_header_length + 1, 1ull << 40),
            kPrefix + "header length 104857601 exceeds the limit of 104857600 bytes");
  EXPECT_EQ(length_error(~0ull, ~0ull),
            kPrefix + "header length 18446744073709551615 exceeds the limit of 104857600 bytes");
}

TEST(HeaderLength, RejectsLengthBeyondTheObject) {
  EXPECT_EQ(length_error(100, 107),
            kPrefix + "header length 100 runs past the end of the object (107 bytes)");
}

TEST(HeaderLength, RejectsObjectSmallerThanThePrefix) {
  EXPECT_EQ(length_error(0, 5),
            kPrefix + "the object is 5 bytes, too small for the 8-byte header length");
}

TEST(ParseHeader, RejectsJsonLongerThanTheObject) {
  try {
    parse_header("{}", 9, kObject);
    FAIL() << "no FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()),
              kPrefix + "header length 2 runs past the end of the object (9 bytes)");
  }
}

// ---- JSON structure ----

TEST(ParseHeader, RejectsInvalidJson) {
  const std::vector<std::string> samples{
      "",
      "   ",
      "{",
      R"({"w":)",
      R"({"w" 1})",
      R"({"w":{"dtype":"F32","shape":[1,],"data_offsets":[0,4]}})",
      R"({"w":{"dtype":"F32","shape":[1 1],"data_offsets":[0,4]}})",
      R"({"w":{"dtype":"F\q","shape":[1],"data_offsets":[0,4]}})",
      R"({"__metadata__":{"a":"b",}})",
      "{\"\xff\":1}",
      "{} x",
  };
  for (const auto& json : samples) {
    EXPECT_EQ(format_error(json).rfind(kPrefix + "invalid JSON (", 0), 0u) << json;
  }
}

TEST(ParseHeader, RejectsContentAfterTheTopLevelObject) {
  EXPECT_EQ(format_error("{}{}"), kPrefix + "invalid JSON (content after the top-level object)");
  EXPECT_EQ(format_error(R"({"__metadata__":{}}})"),
            kPrefix + "invalid JSON (content after the top-level object)");
}

TEST(ParseHeader, RejectsTopLevelThatIsNotAnObject) {
  EXPECT_EQ(format_error("[1]"), kPrefix + "the top level is an array, not an object");
  EXPECT_EQ(format_error("5"), kPrefix + "the top level is a number, not an object");
  EXPECT_EQ(format_error(R"("pt")"), kPrefix + "the top level is a string, not an object");
  EXPECT_EQ(format_error("null"), kPrefix + "the top level is null, not an object");
}

TEST(ParseHeader, RejectsTensorEntryThatIsNotAnObject) {
  EXPECT_EQ(format_error(R"({"w":[1]})"), kPrefix + R"(tensor "w": entry is an array, not an object)");
  EXPECT_EQ(format_error(R"({"w":"F32"})"), kPrefix + R"(tensor "w": entry is a string, not an object)");
}

TEST(ParseHeader, RejectsMissingDtype) {
  EXPECT_EQ(format_error(R"({"w":{"shape":[1],"data_offsets":[0,4]}})"),
            kPrefix + R"(tensor "w": missing "dtype")");
}

TEST(ParseHeader, RejectsMissingShape) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})"),
            kPrefix + R"(tensor "w": missing "shape")");
}

TEST(ParseHeader, RejectsMissingDataOffsets) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":"F32","shape":[1]}})"),
            kPrefix + R"(tensor "w": missing "data_offsets")");
}

TEST(ParseHeader, RejectsDtypeThatIsNotAString) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})"),
            kPrefix + R"(tensor "w": "dtype" is a number, not a string)");
}

TEST(ParseHeader, RejectsShapeThatIsNotAnArray) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":"F32","shape":"2x2","data_offsets":[0,16]}})"),
            kPrefix + R"(tensor "w": "shape" is a string, not an array)");
}

TEST(ParseHeader, RejectsDataOffsetsThatAreNotAnArray) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":{"begin":0}}})"),
            kPrefix + R"(tensor "w": "data_offsets" is an object, not an array of 2 integers)");
}

TEST(ParseHeader, RejectsDataOffsetsWithoutExactlyTwoEntries) {
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[0]")),
            kPrefix + R"(tensor "w": "data_offsets" must hold 2 entries (begin, end), not 1)");
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[0,4,8]")),
            kPrefix + R"(tensor "w": "data_offsets" must hold 2 entries (begin, end), not 3)");
}

TEST(ParseHeader, RejectsDataOffsetsThatAreNotNonNegativeIntegers) {
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[-1,4]")),
            kPrefix + R"(tensor "w": "data_offsets"[0] is -1, not a non-negative integer that fits uint64)");
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[0,4.0]")),
            kPrefix + R"(tensor "w": "data_offsets"[1] is 4.0, not a non-negative integer that fits uint64)");
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[0,18446744073709551616]")),
            kPrefix + R"(tensor "w": "data_offsets"[1] is 18446744073709551616, not a non-negative integer that fits uint64)");
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", R"(["0",4])")),
            kPrefix + R"(tensor "w": "data_offsets"[0] is a string, not a non-negative integer)");
}

TEST(ParseHeader, RejectsDuplicateFieldInATensorEntry) {
  EXPECT_EQ(format_error(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})"),
            kPrefix + R"(tensor "w": duplicate field "dtype")");
}

TEST(ParseHeader, RejectsUnknownDtype) {
  EXPECT_EQ(format_error(one_tensor("Q4_K", "[1]", "[0,4]")),
            kPrefix + R"(tensor "w": unknown dtype "Q4_K")");
  EXPECT_EQ(format_error(one_tensor("bf16", "[1]", "[0,2]")),
            kPrefix + R"(tensor "w": unknown dtype "bf16")");
}

TEST(ParseHeader, RejectsNegativeDimension) {
  EXPECT_EQ(format_error(one_tensor("F32", "[2,-3]", "[0,24]")),
            kPrefix + R"(tensor "w": "shape"[1] is -3, not a non-negative integer that fits int64)");
}

TEST(ParseHeader, RejectsFloatDimension) {
  EXPECT_EQ(format_error(one_tensor("F32", "[2.0]", "[0,8]")),
            kPrefix + R"(tensor "w": "shape"[0] is 2.0, not a non-negative integer that fits int64)");
  EXPECT_EQ(format_error(one_tensor("F32", "[1e3]", "[0,4000]")),
            kPrefix + R"(tensor "w": "shape"[0] is 1e3, not a non-negative integer that fits int64)");
}

TEST(ParseHeader, RejectsStringDimension) {
  EXPECT_EQ(format_error(one_tensor("F32", R"(["2"])", "[0,8]")),
            kPrefix + R"(tensor "w": "shape"[0] is a string, not a non-negative integer)");
}

TEST(ParseHeader, RejectsDimensionTooLargeForInt64) {
  EXPECT_EQ(format_error(one_tensor("U8", "[9223372036854775808]", "[0,8]")),
            kPrefix + R"(tensor "w": "shape"[0] is 9223372036854775808, not a non-negative integer that fits int64)");
}

// ---- offsets and sizes ----

TEST(ParseHeader, RejectsBeginAfterEnd) {
  EXPECT_EQ(format_error(one_tensor("F32", "[1]", "[8,4]")),
            kPrefix + R"(tensor "w": "data_offsets" [8, 4]: begin is after end)");
}

TEST(ParseHeader, RejectsEndBeyondTheDataRegion) {
  EXPECT_EQ(format_error(one_tensor("F32", "[4]", "[8,24]"), 16),
            kPrefix + R"(tensor "w": "data_offsets" end 24 is beyond the data region (16 bytes))");
}

TEST(ParseHeader, AcceptsTensorEndingAtTheDataRegionsEnd) {
  const auto header = parse(one_tensor("F32", "[4]", "[0,16]"), 16);
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_EQ(header.tensors[0].end, 16u);
}

TEST(ParseHeader, RejectsByteLengthThatIsNotNumelTimesElementSize) {
  EXPECT_EQ(format_error(one_tensor("F32", "[2,3]", "[0,20]")),
            kPrefix + R"(tensor "w": "data_offsets" [0, 20] span 20 bytes but shape [2, 3] of F32 needs 24)");
  EXPECT_EQ(format_error(one_tensor("BF16", "[]", "[0,0]")),
            kPrefix + R"(tensor "w": "data_offsets" [0, 0] span 0 bytes but shape [] of BF16 needs 2)");
}

TEST(ParseHeader, RejectsShapeWhoseElementCountOverflows) {
  // 2^32 × 2^32 wraps to 0 in 64 bits, which would match the empty range without the check.
  EXPECT_EQ(format_error(one_tensor("F32", "[4294967296,4294967296]", "[0,0]")),
            kPrefix + R"(tensor "w": shape [4294967296, 4294967296] has too many elements)");
}

TEST(ParseHeader, RejectsShapeWhoseByteCountOverflows) {
  // 2^62 elements fit int64; 2^62 × 8 bytes wraps to 0.
  EXPECT_EQ(format_error(one_tensor("F64", "[4611686018427387904]", "[0,0]")),
            kPrefix + R"(tensor "w": shape [4611686018427387904] has too many elements)");
}

TEST(ParseHeader, RejectsOverlappingTensorsNamingBoth) {
  const auto json = "{" + tensor_json("b", "F32", "[2]", "[4,12]") + "," +
                    tensor_json("a", "F32", "[2]", "[0,8]") + "}";
  EXPECT_EQ(format_error(json), kPrefix + R"(tensor "b": bytes [4, 12) overlap tensor "a" [0, 8))");
}

TEST(ParseHeader, RejectsTensorsSharingTheSameRange) {
  const auto json = "{" + tensor_json("a", "F32", "[2]", "[0,8]") + "," +
                    tensor_json("b", "I32", "[2]", "[0,8]") + "}";
  EXPECT_EQ(format_error(json), kPrefix + R"(tensor "b": bytes [0, 8) overlap tensor "a" [0, 8))");
}

TEST(ParseHeader, RejectsTensorInsideAnEarlierLongerOne) {
  const auto json = "{" + tensor_json("big", "U8", "[100]", "[0,100]") + "," +
                    tensor_json("mid", "U8", "[10]", "[90,100]") + "," +
                    tensor_json("small", "U8", "[4]", "[40,44]") + "}";
  EXPECT_EQ(format_error(json),
            kPrefix + R"(tensor "small": bytes [40, 44) overlap tensor "big" [0, 100))");
}

TEST(ParseHeader, AllowsGapsBetweenTensors) {
  const auto json = "{" + tensor_json("a", "F32", "[1]", "[0,4]") + "," +
                    tensor_json("b", "F32", "[1]", "[64,68]") + "}";
  const auto header = parse(json, 100);
  ASSERT_EQ(header.tensors.size(), 2u);
  EXPECT_EQ(header.tensors[1].begin, 64u);
}

TEST(ParseHeader, RejectsDuplicateTensorNames) {
  const auto json = "{" + tensor_json("w", "F32", "[1]", "[0,4]") + "," +
                    tensor_json("w", "F32", "[1]", "[4,8]") + "}";
  EXPECT_EQ(format_error(json), kPrefix + R"(tensor "w": appears more than once)");
}

// ---- __metadata__ ----

TEST(ParseHeader, RejectsMetadataThatIsNotAnObject) {
  EXPECT_EQ(format_error(R"({"__metadata__":"pt"})"),
            kPrefix + R"("__metadata__" is a string, not an object of strings)");
}

TEST(ParseHeader, RejectsMetadataValueThatIsNotAString) {
  EXPECT_EQ(format_error(R"({"__metadata__":{"format":"pt","step":5}})"),
            kPrefix + R"("__metadata__" entry "step" is a number, not a string)");
}

TEST(ParseHeader, RejectsDuplicateMetadata) {
  EXPECT_EQ(format_error(R"({"__metadata__":{},"__metadata__":{}})"),
            kPrefix + R"(duplicate "__metadata__")");
  EXPECT_EQ(format_error(R"({"__metadata__":{"a":"1","a":"2"}})"),
            kPrefix + R"(duplicate "__metadata__" entry "a")");
}

TEST(ParseHeader, RejectsFormatOtherThanPt) {
  EXPECT_EQ(format_error(R"({"__metadata__":{"format":"np"}})"),
            R"(unsupported format "np" in m.safetensors: only "pt" is supported)");
}

TEST(ParseHeader, ReturnsMetadataEntries) {
  const auto header = parse(R"({"__metadata__":{"format":"pt","step":"5"}})");
  EXPECT_EQ(header.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"step", "5"}}));
}

TEST(ParseHeader, AcceptsHeaderWithoutMetadataOrTensors) {
  const auto header = parse("{}", 0);
  EXPECT_TRUE(header.tensors.empty());
  EXPECT_TRUE(header.metadata.empty());
  EXPECT_EQ(header.data_start, 10u);
}

// ---- what a valid header gives ----

TEST(ParseHeader, ReturnsTensorsWithDataStartAfterTheHeader) {
  const auto json = "{" + tensor_json("w", "BF16", "[2,3]", "[0,12]") + "}  ";
  const auto header = parse(json, 12);
  EXPECT_EQ(header.data_start, 8 + json.size());
  ASSERT_EQ(header.tensors.size(), 1u);
  const auto& w = header.tensors[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.dtype, Dtype::BF16);
  EXPECT_EQ(w.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(w.begin, 0u);
  EXPECT_EQ(w.end, 12u);
  EXPECT_EQ(w.byte_size(), 12u);
  EXPECT_EQ(w.numel(), 6u);
}

TEST(ParseHeader, AcceptsScalarsWithOneElement) {
  const auto header = parse(one_tensor("F64", "[]", "[0,8]"), 8);
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_TRUE(header.tensors[0].shape.empty());
  EXPECT_EQ(header.tensors[0].numel(), 1u);
  EXPECT_EQ(header.tensors[0].byte_size(), 8u);
}

TEST(ParseHeader, AcceptsZeroElementTensorsAnywhere) {
  // Zero bytes overlap nothing, even at an offset inside another tensor or at the region's end.
  const auto json = "{" + tensor_json("a", "F32", "[4]", "[0,16]") + "," +
                    tensor_json("empty", "F32", "[0,4]", "[8,8]") + "," +
                    tensor_json("tail", "I64", "[3,0]", "[16,16]") + "}";
  const auto header = parse(json, 16);
  ASSERT_EQ(header.tensors.size(), 3u);
  EXPECT_EQ(header.tensors[1].name, "empty");
  EXPECT_EQ(header.tensors[1].numel(), 0u);
  EXPECT_EQ(header.tensors[1].byte_size(), 0u);
  EXPECT_EQ(header.tensors[2].name, "tail");
}

TEST(ParseHeader, AcceptsZeroDimensionNextToHugeOnes) {
  const auto header = parse(one_tensor("F64", "[0,4611686018427387904,4611686018427387904]", "[0,0]"));
  EXPECT_EQ(header.tensors.at(0).numel(), 0u);
}

TEST(ParseHeader, SortsTensorsByBeginThenName) {
  const auto json = "{" + tensor_json("c", "U8", "[4]", "[8,12]") + "," +
                    tensor_json("z", "U8", "[0]", "[4,4]") + "," +
                    tensor_json("b", "U8", "[4]", "[0,4]") + "," +
                    tensor_json("a", "U8", "[4]", "[4,8]") + "}";
  const auto header = parse(json, 12);
  std::vector<std::string> names;
  for (const auto& tensor : header.tensors) names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "a", "z", "c"}));
}

TEST(ParseHeader, UnescapesNamesAndQuotesThemInMessages) {
  const auto header = parse(R"({"a\"b\\c\u00e9\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})");
  EXPECT_EQ(header.tensors.at(0).name, "a\"b\\c\xc3\xa9\n");
  EXPECT_EQ(format_error(R"({"a\"b\n":{"dtype":"X","shape":[1],"data_offsets":[0,1]}})"),
            kPrefix + R"(tensor "a\"b\n": unknown dtype "X")");
}

TEST(ParseHeader, IgnoresUnknownFieldsButValidatesThem) {
  const auto ok = parse(
      R"({"w":{"dtype":"U8","extra":{"n":[1,-2.5,true,false,null,"s",{}]},"shape":[1],"data_offsets":[0,1]}})");
  EXPECT_EQ(ok.tensors.at(0).name, "w");
  EXPECT_EQ(format_error(R"({"w":{"extra":[tru],"dtype":"U8","shape":[1],"data_offsets":[0,1]}})")
                .rfind(kPrefix + "invalid JSON (", 0),
            0u);
  EXPECT_EQ(format_error(R"({"w":{"extra":{"a" 1},"dtype":"U8","shape":[1],"data_offsets":[0,1]}})")
                .rfind(kPrefix + "invalid JSON (", 0),
            0u);
}

TEST(TensorInfo, NumelIsTheProductOfTheShape) {
  TensorInfo info;
  EXPECT_EQ(info.numel(), 1u);
  info.shape = {2, 3, 4};
  EXPECT_EQ(info.numel(), 24u);
  info.shape = {5, 0};
  EXPECT_EQ(info.numel(), 0u);
}

// ---- writing ----

// The message of the InvalidArgument (exactly that type) `action` throws.
template <typename Action>
std::string invalid_argument(Action action) {
  try {
    action();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(typeid(e), typeid(InvalidArgument));
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

std::vector<std::byte> pattern_bytes(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  return bytes;
}

TEST(EncodeHeader, WritesTheLengthThenJsonPaddedWithSpacesToAMultipleOf8) {
  const std::vector<TensorSpec> tensors{{"a", Dtype::F32, {2}}, {"b", Dtype::U8, {3}}};
  std::string json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  const auto encoded = encode_header(tensors);
  ASSERT_EQ(encoded.size(), 8 + json.size());
  EXPECT_EQ(encoded.size() % 8, 0u);
  const auto length = little_endian(json.size());
  EXPECT_EQ(encoded.substr(0, 8), std::string(reinterpret_cast<const char*>(length.data()), 8));
  EXPECT_EQ(encoded.substr(8), json);
}

TEST(EncodeHeader, PadsEveryLengthToAMultipleOf8) {
  for (std::size_t n = 1; n <= 16; ++n) {
    const std::vector<TensorSpec> tensors{{std::string(n, 'x'), Dtype::U8, {1}}};
    const auto encoded = encode_header(tensors);
    EXPECT_EQ(encoded.size() % 8, 0u) << n;
    EXPECT_LT(encoded.find_last_not_of(' '), encoded.size());
    EXPECT_GE(encoded.find_last_not_of(' '), encoded.size() - 8);
  }
}

TEST(EncodeHeader, EscapesNames) {
  const std::string name = "q\"uote\\back\nline\x01\xc3\xa9/";
  const std::vector<TensorSpec> tensors{{name, Dtype::U8, {1}}};
  const auto encoded = encode_header(tensors);
  EXPECT_NE(encoded.find(R"("q\"uote\\back\nline\u0001)" "\xc3\xa9/\""), std::string::npos);
  const auto header = parse_header(encoded.substr(8), encoded.size() + 1, kObject);
  EXPECT_EQ(header.tensors.at(0).name, name);
}

TEST(EncodeHeader, AddsUserMetadataAfterFormat) {
  const auto encoded = encode_header({}, {{"step", "5"}, {"format", "pt"}, {"a\"", "b"}});
  EXPECT_EQ(encoded.substr(8).substr(0, encoded.find_last_not_of(' ') - 7),
            R"({"__metadata__":{"format":"pt","a\"":"b","step":"5"}})");
}

TEST(EncodeHeader, RejectsDuplicateNames) {
  const std::vector<TensorSpec> tensors{{"a", Dtype::U8, {1}}, {"a", Dtype::U8, {2}}};
  EXPECT_EQ(invalid_argument([&] { encode_header(tensors); }),
            R"(safetensors header: tensor "a" appears more than once)");
}

TEST(EncodeHeader, RejectsNegativeDimension) {
  const std::vector<TensorSpec> tensors{{"a", Dtype::U8, {2, -1}}};
  EXPECT_EQ(invalid_argument([&] { encode_header(tensors); }),
            R"(safetensors header: tensor "a": negative dimension -1)");
}

TEST(EncodeHeader, RejectsTheMetadataName) {
  const std::vector<TensorSpec> tensors{{"__metadata__", Dtype::U8, {1}}};
  EXPECT_EQ(invalid_argument([&] { encode_header(tensors); }),
            R"(safetensors header: "__metadata__" cannot be a tensor name)");
}

TEST(EncodeHeader, RejectsNamesThatAreNotUtf8) {
  const std::vector<TensorSpec> tensors{{"a\xff", Dtype::U8, {1}}};
  EXPECT_EQ(invalid_argument([&] { encode_header(tensors); }),
            "safetensors header: tensor name \"a\xff\" is not UTF-8");
}

TEST(EncodeHeader, RejectsFormatOtherThanPt) {
  EXPECT_EQ(invalid_argument([&] { encode_header({}, {{"format", "np"}}); }),
            R"(safetensors header: metadata format "np" is not "pt")");
}

TEST(TensorByteSize, IsNumelTimesElementSize) {
  EXPECT_EQ(tensor_byte_size({"s", Dtype::F64, {}}), 8u);
  EXPECT_EQ(tensor_byte_size({"m", Dtype::BF16, {3, 5}}), 30u);
  EXPECT_EQ(tensor_byte_size({"e", Dtype::F32, {0, 5}}), 0u);
  EXPECT_EQ(tensor_byte_size({"z", Dtype::F32, {4294967296, 4294967296, 0}}), 0u);
}

TEST(TensorByteSize, RejectsOverflow) {
  EXPECT_EQ(invalid_argument([] { tensor_byte_size({"big", Dtype::U8, {4294967296, 4294967296}}); }),
            R"(tensor "big": shape has too many elements)");
  EXPECT_EQ(invalid_argument([] { tensor_byte_size({"big", Dtype::F64, {4611686018427387904}}); }),
            R"(tensor "big": shape has too many elements)");
}

TEST(WriteSafetensors, RoundTripsSpecsAndBytes) {
  testing::TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> tensors{
      {"model.embed\"tokens\\weight\n", Dtype::BF16, {7, 3}},
      {"scalar", Dtype::F64, {}},
      {"empty", Dtype::F32, {0, 4}},
      {"mask", Dtype::BOOL, {5}},
      {"f8", Dtype::F8_E4M3, {2, 2}},
      {"\xc3\xa9t\xc3\xa9", Dtype::I64, {3}},
  };
  std::vector<std::vector<std::byte>> data;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    data.push_back(pattern_bytes(tensor_byte_size(tensors[i]), static_cast<unsigned>(i)));
  }
  const std::vector<std::span<const std::byte>> spans(data.begin(), data.end());
  const auto size = write_safetensors(path, tensors, spans, {{"note", "round trip"}});

  const auto file = read_file(path);
  EXPECT_EQ(size, file.size());
  const auto header = read_header(file, path.string());
  EXPECT_EQ(header.data_start % 8, 0u);
  EXPECT_EQ(header.metadata,
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "round trip"}}));
  ASSERT_EQ(header.tensors.size(), tensors.size());
  std::uint64_t data_size = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto found = std::find_if(header.tensors.begin(), header.tensors.end(),
                                    [&](const auto& t) { return t.name == tensors[i].name; });
    ASSERT_NE(found, header.tensors.end()) << tensors[i].name;
    EXPECT_EQ((TensorSpec{found->name, found->dtype, found->shape}), tensors[i]);
    EXPECT_EQ(found->begin, data_size);
    data_size += data[i].size();
    const auto bytes = std::string_view(file).substr(header.data_start + found->begin,
                                                     found->byte_size());
    EXPECT_EQ(bytes, std::string_view(reinterpret_cast<const char*>(data[i].data()), data[i].size()))
        << tensors[i].name;
  }
  EXPECT_EQ(file.size(), header.data_start + data_size);
}

TEST(WriteSafetensors, AsksForEachTensorsBytesInOrderInBoundedPieces) {
  testing::TempDir dir;
  const auto path = dir.path() / "big.safetensors";
  constexpr std::uint64_t kMiB = 1 << 20;
  const std::vector<TensorSpec> tensors{
      {"small", Dtype::U8, {3}}, {"big", Dtype::U8, {40 * kMiB + 5}}, {"last", Dtype::I16, {2}}};
  struct Call {
    std::string name;
    std::uint64_t offset;
    std::size_t size;
  };
  std::vector<Call> calls;
  const auto fill = [&](const TensorSpec& tensor, std::uint64_t offset, std::span<std::byte> out) {
    calls.push_back({tensor.name, offset, out.size()});
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<std::byte>((offset + i) * 7 + tensor.name.size());
    }
  };
  write_safetensors(path, tensors, fill);

  std::map<std::string, std::uint64_t> next_offset;
  std::vector<std::string> order;
  for (const auto& call : calls) {
    EXPECT_LE(call.size, 16 * kMiB);
    EXPECT_GT(call.size, 0u);
    EXPECT_EQ(call.offset, next_offset[call.name]) << call.name;
    next_offset[call.name] += call.size;
    if (order.empty() || order.back() != call.name) order.push_back(call.name);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"small", "big", "last"}));
  EXPECT_EQ(next_offset["big"], 40 * kMiB + 5);
  EXPECT_EQ(next_offset["last"], 4u);

  const auto file = read_file(path);
  const auto header = read_header(file, path.string());
  const auto& big = header.tensors.at(1);
  ASSERT_EQ(big.name, "big");
  for (const std::uint64_t offset : {std::uint64_t{0}, 16 * kMiB - 1, 16 * kMiB, 40 * kMiB + 4}) {
    EXPECT_EQ(static_cast<std::byte>(file.at(header.data_start + big.begin + offset)),
              static_cast<std::byte>(offset * 7 + 3))
        << offset;
  }
}

TEST(WriteSafetensors, WritesAFileWithoutTensors) {
  testing::TempDir dir;
  const auto path = dir.path() / "empty.safetensors";
  write_safetensors(path, {}, [](const TensorSpec&, std::uint64_t, std::span<std::byte>) {});
  const auto file = read_file(path);
  const auto header = read_header(file, path.string());
  EXPECT_TRUE(header.tensors.empty());
  EXPECT_EQ(header.data_start, file.size());
}

TEST(WriteSafetensors, RejectsBuffersThatDoNotMatchTheTensors) {
  testing::TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> tensors{{"a", Dtype::F32, {2}}, {"b", Dtype::U8, {1}}};
  const std::vector<std::byte> four(4), one(1);
  const std::vector<std::span<const std::byte>> short_a{four, one};
  EXPECT_EQ(invalid_argument([&] { write_safetensors(path, tensors, short_a); }),
            path.string() + R"(: tensor "a" needs 8 bytes, got 4)");
  const std::vector<std::span<const std::byte>> only_one{four};
  EXPECT_EQ(invalid_argument([&] { write_safetensors(path, tensors, only_one); }),
            path.string() + ": 1 byte buffers for 2 tensors");
  EXPECT_FALSE(fs::exists(path));
}

TEST(WriteSafetensors, NamesThePathInSpecErrors) {
  testing::TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> tensors{{"a", Dtype::U8, {-2}}};
  EXPECT_EQ(invalid_argument([&] {
              write_safetensors(path, tensors, [](auto&&...) {});
            }),
            path.string() + R"(: tensor "a": negative dimension -2)");
}

TEST(WriteSafetensors, ThrowsStorageErrorNamingThePathWhenItCannotWrite) {
  testing::TempDir dir;
  const auto path = dir.path() / "missing" / "m.safetensors";
  try {
    write_safetensors(path, {}, [](const TensorSpec&, std::uint64_t, std::span<std::byte>) {});
    FAIL() << "no StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(typeid(e), typeid(StorageError));
    EXPECT_EQ(e.object(), path.string());
    EXPECT_EQ(e.cause(), "cannot create " + path.string() + ".partial: No such file or directory");
    EXPECT_FALSE(e.transient());
  }
}

TEST(WriteSafetensors, LeavesNoFileWhenTheFillerThrows) {
  testing::TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> tensors{{"a", Dtype::U8, {10}}};
  const auto fail = [](const TensorSpec&, std::uint64_t, std::span<std::byte>) {
    throw std::runtime_error("boom");
  };
  EXPECT_THROW(write_safetensors(path, tensors, fail), std::runtime_error);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(WriteSafetensors, ReplacesAnExistingFile) {
  testing::TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> first{{"a", Dtype::U8, {100}}};
  const std::vector<TensorSpec> second{{"b", Dtype::U8, {1}}};
  const auto zeros = [](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
  };
  write_safetensors(path, first, zeros);
  const auto size = write_safetensors(path, second, zeros);
  const auto file = read_file(path);
  EXPECT_EQ(file.size(), size);
  EXPECT_EQ(read_header(file, path.string()).tensors.at(0).name, "b");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace tensorstream
