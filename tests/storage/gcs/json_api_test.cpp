// The JSON API's request targets and the parsing of its responses: metadata, listings, errors.

#include <gtest/gtest.h>

#include <string>

#include "storage/gcs/error_body.hpp"
#include "storage/gcs/json_api.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::gcs {
namespace {

const std::string url = "gs://models/llama/";

template <class Parse>
std::string format_error(Parse parse) {
  try {
    parse();
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

TEST(GcsJsonApi, ObjectNamesAreFullyPercentEncoded) {
  EXPECT_EQ(metadata_target("models", "llama/model.safetensors"),
            "/storage/v1/b/models/o/llama%2Fmodel.safetensors?fields=size%2Cgeneration");
  EXPECT_EQ(media_target("models", "a b+c?d#e%f&g=h~i_j-k.l"),
            "/storage/v1/b/models/o/a%20b%2Bc%3Fd%23e%25f%26g%3Dh~i_j-k.l?alt=media");
  EXPECT_EQ(media_target("models", "\xc3\xa9t\xc3\xa9"),
            "/storage/v1/b/models/o/%C3%A9t%C3%A9?alt=media");
}

TEST(GcsJsonApi, MediaReadsOfAPinnedGenerationAreConditionalOnIt) {
  EXPECT_EQ(media_target("models", "a", "1700000000123456"),
            "/storage/v1/b/models/o/a?alt=media&ifGenerationMatch=1700000000123456");
}

TEST(GcsJsonApi, ListTargetsCarryPrefixDelimiterTokenAndFields) {
  EXPECT_EQ(list_target("models", "llama 2/", true, std::nullopt),
            "/storage/v1/b/models/o?prefix=llama%202%2F&delimiter=%2F"
            "&fields=items%28name%2Csize%29%2Cprefixes%2CnextPageToken");
  EXPECT_EQ(list_target("models", "", false, std::string("Cg/x+y=")),
            "/storage/v1/b/models/o?prefix=&pageToken=Cg%2Fx%2By%3D"
            "&fields=items%28name%2Csize%29%2Cprefixes%2CnextPageToken");
}

TEST(GcsJsonApi, ObjectSizeAndGenerationAreReadFromTheirDecimalStrings) {
  const auto metadata =
      parse_object_metadata(R"({"size":"18446744073709551615","generation":"1700000000123456"})",
                            url);
  EXPECT_EQ(metadata.size, 18446744073709551615ull);
  EXPECT_EQ(metadata.generation, "1700000000123456");
  const auto without_generation =
      parse_object_metadata(R"({"kind":"storage#object","name":"a","size":"0"})", url);
  EXPECT_EQ(without_generation.size, 0u);
  EXPECT_EQ(without_generation.generation, "");
}

TEST(GcsJsonApi, MalformedMetadataNamesTheUrlAndTheProblem) {
  EXPECT_EQ(format_error([] { parse_object_metadata(R"({"size":12})", url); }),
            "gs://models/llama/: malformed object metadata from the JSON API: size: The JSON "
            "element does not have the requested type.");
  EXPECT_EQ(format_error([] { parse_object_metadata(R"({"size":"12x"})", url); }),
            "gs://models/llama/: malformed object metadata from the JSON API: size \"12x\" is "
            "not a byte count");
  EXPECT_EQ(format_error([] { parse_object_metadata(R"({"size":"1","generation":"7;x"})", url); }),
            "gs://models/llama/: malformed object metadata from the JSON API: generation \"7;x\" "
            "is not a decimal number");
  EXPECT_EQ(format_error([] { parse_object_metadata("<html>", url); }),
            "gs://models/llama/: malformed object metadata from the JSON API: The JSON document "
            "has an improper structure: missing or superfluous commas, braces, missing keys, "
            "etc.");
}

TEST(GcsJsonApi, ListingPageGivesNamesSizesAndTheNextToken) {
  const auto page = parse_objects_page(
      R"({"kind":"storage#objects","nextPageToken":"CgNhL2I=","prefixes":["llama/sub/"],)"
      R"("items":[{"name":"llama/a.safetensors","size":"10"},)"
      R"({"name":"llama/b.json","size":"3","bucket":"models"}]})",
      url);
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "llama/a.safetensors");
  EXPECT_EQ(page.objects[0].size, 10u);
  EXPECT_EQ(page.objects[1].key, "llama/b.json");
  EXPECT_EQ(page.objects[1].size, 3u);
  EXPECT_EQ(page.prefixes, std::vector<std::string>{"llama/sub/"});
  EXPECT_EQ(page.next_token, "CgNhL2I=");
}

TEST(GcsJsonApi, LastAndEmptyPagesHaveNoToken) {
  const auto empty = parse_objects_page(R"({"kind":"storage#objects"})", url);
  EXPECT_TRUE(empty.objects.empty());
  EXPECT_EQ(empty.next_token, std::nullopt);
  const auto last = parse_objects_page(R"({"items":[{"name":"x","size":"1"}]})", url);
  EXPECT_EQ(last.objects.size(), 1u);
  EXPECT_EQ(last.next_token, std::nullopt);
}

TEST(GcsJsonApi, MalformedListingNamesTheUrlAndTheProblem) {
  EXPECT_EQ(format_error([] { parse_objects_page(R"({"items":[{"size":"1"}]})", url); }),
            "gs://models/llama/: malformed object listing from the JSON API: name: The JSON "
            "field referenced does not exist in this object.");
  EXPECT_EQ(format_error([] { parse_objects_page(R"({"items":{}})", url); }),
            "gs://models/llama/: malformed object listing from the JSON API: items: The JSON "
            "element does not have the requested type.");
  EXPECT_EQ(format_error([] { parse_objects_page(R"({"items":[{"name":"a","size":"-1"}]})", url); }),
            "gs://models/llama/: malformed object listing from the JSON API: size \"-1\" is not "
            "a byte count");
}

TEST(GcsJsonApi, ErrorBodyGivesTheMessage) {
  EXPECT_EQ(error_message(R"({"error":{"code":404,"message":"No such object: b/o",)"
                          R"("errors":[{"message":"No such object: b/o","reason":"notFound"}]}})"),
            "No such object: b/o");
  EXPECT_EQ(error_message(R"({"error":"invalid_grant"})"), std::nullopt);
  EXPECT_EQ(error_message(R"({"error":{"code":500,"message":""}})"), std::nullopt);
  EXPECT_EQ(error_message("Service Unavailable"), std::nullopt);
  EXPECT_EQ(error_message(""), std::nullopt);
}

}  // namespace
}  // namespace tensorstream::gcs
