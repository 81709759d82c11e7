#include <gtest/gtest.h>

#include "storage/s3/ini_file.hpp"
#include "storage/s3/iso8601.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

using namespace std::chrono_literals;

std::string parse_error(std::string_view text) {
  try {
    parse_ini(text, "/home/u/.aws/config");
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(S3IniFile, SectionsKeysCommentsAndContinuations) {
  const auto sections = parse_ini(
      "# comment\n"
      "; another\n"
      "\n"
      "[default]\n"
      "aws_access_key_id = AKID\r\n"
      "aws_secret_access_key=se=cret \n"
      "[profile dev]  \n"
      "region = eu-west-1\n"
      "s3 =\n"
      "  max_concurrent_requests = 20\n"
      "\tuse_accelerate_endpoint = true\n"
      "[default]\n"
      "aws_session_token = TOKEN\n"
      "aws_access_key_id = AKID2",
      "credentials");
  ASSERT_EQ(sections.size(), 2u);
  EXPECT_EQ(sections.at("default"), (IniSection{{"aws_access_key_id", "AKID2"},
                                                {"aws_secret_access_key", "se=cret"},
                                                {"aws_session_token", "TOKEN"}}));
  EXPECT_EQ(sections.at("profile dev"),
            (IniSection{{"region", "eu-west-1"},
                        {"s3", "\nmax_concurrent_requests = 20\nuse_accelerate_endpoint = true"}}));
}

TEST(S3IniFile, EmptyTextHasNoSections) {
  EXPECT_TRUE(parse_ini("", "f").empty());
  EXPECT_TRUE(parse_ini("\n# only a comment\n\n", "f").empty());
}

TEST(S3IniFile, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(parse_error("key = value\n"),
            "/home/u/.aws/config:1: setting \"key\" outside of any [section]");
  EXPECT_EQ(parse_error("[default]\n\njust words\n"),
            "/home/u/.aws/config:3: expected \"key = value\", got \"just words\"");
  EXPECT_EQ(parse_error("[default\n"),
            "/home/u/.aws/config:1: section header \"[default\" lacks ']'");
  EXPECT_EQ(parse_error("[ ]\n"), "/home/u/.aws/config:1: empty section name");
  EXPECT_EQ(parse_error("[default]\n= value\n"), "/home/u/.aws/config:2: setting without a key");
  EXPECT_EQ(parse_error("[default]\n  indented = 1\n"),
            "/home/u/.aws/config:2: indented line \"indented = 1\" continues no setting");
}

TEST(S3Iso8601, ParsesUtcTimestamps) {
  using std::chrono::sys_days;
  using std::chrono::year;
  const auto expected = sys_days{year{2026} / 11 / 29} + 14h + 5min + 7s;
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07Z"), expected);
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07.123Z"), expected);
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07+00:00"), expected);
}

TEST(S3Iso8601, RejectsOtherText) {
  EXPECT_EQ(parse_iso8601("2026-11-29 14:05:07Z"), std::nullopt);
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07"), std::nullopt);
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07+02:00"), std::nullopt);
  EXPECT_EQ(parse_iso8601("2026-02-30T14:05:07Z"), std::nullopt);
  EXPECT_EQ(parse_iso8601("2026-11-29T24:05:07Z"), std::nullopt);
  EXPECT_EQ(parse_iso8601("2026-11-29T14:05:07.Z"), std::nullopt);
  EXPECT_EQ(parse_iso8601("1.7E9"), std::nullopt);
}

}  // namespace
}  // namespace tensorstream::s3
