#include "tensorstream/storage/object_version.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace tensorstream::object_version_tests {

using Kind = ObjectVersion::Kind;
using std::chrono::nanoseconds;
using std::chrono::seconds;

const std::string east = "https://east.blob.core.windows.net/models/llama/model.safetensors";
const std::string west = "https://west.blob.core.windows.net/models/llama/model.safetensors";

const std::string blob_id = "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b";

// 2026-12-01 05:40:01.123456789 UTC.
constexpr auto december = seconds(1796103601) + nanoseconds(123456789);

// Every kind, with characters the encoded form must escape.
std::vector<ObjectVersion> every_kind() {
  return {ObjectVersion::etag(east, "\"a1\""),
          ObjectVersion::etag(east, "W/\"5e0be100-8a3c0\"", false),
          ObjectVersion::generation("gs://models/model.safetensors", "1764565201123456"),
          ObjectVersion::last_modified("http://127.0.0.1:8080/m/a b%20c.bin",
                                       "Tue, 01 Dec 2026 05:00:00 GMT", false),
          ObjectVersion::file("/models/llama/model.safetensors", 2049, 12, 4096, december),
          ObjectVersion::content(blob_id),
          ObjectVersion::other("mem://east/bucket/m", "revision\t7\nof %the day")};
}

TEST(ObjectVersion, DescribesEachKindAsMessagesNameIt) {
  const auto versions = every_kind();
  EXPECT_EQ(versions[0].describe(), "ETag \"a1\"");
  EXPECT_EQ(versions[1].describe(), "ETag W/\"5e0be100-8a3c0\"");
  EXPECT_EQ(versions[2].describe(), "generation 1764565201123456");
  EXPECT_EQ(versions[3].describe(), "Last-Modified Tue, 01 Dec 2026 05:00:00 GMT");
  EXPECT_EQ(versions[4].describe(),
            "inode 12 of device 2049, 4096 bytes, modified 2026-12-01 05:40:01.123456789 UTC");
  EXPECT_EQ(versions[5].describe(), "blob " + blob_id);
  EXPECT_EQ(versions[6].describe(), "revision\t7\nof %the day");
  EXPECT_EQ(ObjectVersion().describe(), "");
  // A file modified before 1970 (st_mtim's nanoseconds count forward from a second before).
  EXPECT_EQ(ObjectVersion::file("/old", 1, 2, 3, -nanoseconds(1)).describe(),
            "inode 2 of device 1, 3 bytes, modified 1969-12-31 23:59:59.999999999 UTC");
}

TEST(ObjectVersion, SaysWhatItIsMadeOf) {
  const ObjectVersion etag = ObjectVersion::etag(east, "\"a1\"", false);
  EXPECT_EQ(etag.kind(), Kind::etag);
  EXPECT_EQ(etag.value(), "\"a1\"");
  EXPECT_EQ(etag.object(), east);
  EXPECT_FALSE(etag.settled());
  EXPECT_FALSE(etag.empty());
  const ObjectVersion blob = ObjectVersion::content("abc");
  EXPECT_EQ(blob.kind(), Kind::content);
  EXPECT_EQ(blob.object(), "");
  EXPECT_TRUE(blob.settled());
}

TEST(ObjectVersion, AnEmptyValueIsNoVersion) {
  EXPECT_TRUE(ObjectVersion().empty());
  EXPECT_EQ(ObjectVersion().kind(), Kind::none);
  for (const ObjectVersion& version :
       {ObjectVersion::etag(east, ""), ObjectVersion::generation(east, ""),
        ObjectVersion::last_modified(east, ""), ObjectVersion::content(""),
        ObjectVersion::other(east, "", false)}) {
    EXPECT_TRUE(version.empty());
    EXPECT_EQ(version, ObjectVersion());
    EXPECT_EQ(version.object(), "");
    EXPECT_EQ(version.cache_key(), "");
  }
}

TEST(ObjectVersion, EqualMeansTheSameBytes) {
  EXPECT_EQ(ObjectVersion::etag(east, "\"a1\""), ObjectVersion::etag(east, "\"a1\"", false))
      << "settled or not, the same version";
  EXPECT_NE(ObjectVersion::etag(east, "\"a1\""), ObjectVersion::etag(east, "\"b2\""));
  EXPECT_NE(ObjectVersion::etag(east, "\"a1\""), ObjectVersion::etag(west, "\"a1\""))
      << "two accounts' blobs of one container and name";
  EXPECT_NE(ObjectVersion::generation(east, "7"), ObjectVersion::other(east, "7"));
  EXPECT_NE(ObjectVersion::etag(east, "\"a1\""), ObjectVersion());
  EXPECT_EQ(ObjectVersion::file("/m", 2049, 12, 4096, december),
            ObjectVersion::file("/m", 2049, 12, 4096, december));
  EXPECT_NE(ObjectVersion::file("/m", 2049, 12, 4096, december),
            ObjectVersion::file("/m", 2049, 12, 4096, december + nanoseconds(1)));
  EXPECT_NE(ObjectVersion::file("/m", 2049, 12, 4096, december),
            ObjectVersion::file("/m", 2049, 13, 4096, december));
  EXPECT_EQ(ObjectVersion::content("abc"), ObjectVersion::content("abc"));
  EXPECT_NE(ObjectVersion::content("abc"), ObjectVersion::content("abd"));
}

TEST(ObjectVersion, TheCacheKeyNamesTheObjectAndTheVersion) {
  EXPECT_EQ(ObjectVersion::etag(east, "\"a1\"").cache_key(),
            ObjectVersion::etag(east, "\"a1\"", false).cache_key());
  EXPECT_NE(ObjectVersion::etag(east, "\"a1\"").cache_key(),
            ObjectVersion::etag(west, "\"a1\"").cache_key());
  EXPECT_NE(ObjectVersion::etag(east, "\"a1\"").cache_key(),
            ObjectVersion::etag(east, "\"a2\"").cache_key());
  EXPECT_NE(ObjectVersion::generation(east, "7").cache_key(),
            ObjectVersion::other(east, "7").cache_key());
  // Fields that hold the separator cannot make two versions one key.
  EXPECT_NE(ObjectVersion::other("a b", "c").cache_key(),
            ObjectVersion::other("a", "b c").cache_key());
  const auto versions = every_kind();
  for (std::size_t i = 0; i < versions.size(); ++i) {
    for (std::size_t j = i + 1; j < versions.size(); ++j) {
      EXPECT_NE(versions[i].cache_key(), versions[j].cache_key()) << i << " and " << j;
    }
  }
}

TEST(ObjectVersion, EncodedItReadsBackWhole) {
  for (const ObjectVersion& version : every_kind()) {
    const std::string text = version.encode();
    EXPECT_EQ(text.find_first_of("\t\r\n"), std::string::npos) << text;
    const auto decoded = ObjectVersion::decode(text);
    ASSERT_TRUE(decoded.has_value()) << text;
    EXPECT_EQ(*decoded, version) << text;
    EXPECT_EQ(decoded->settled(), version.settled()) << text;
    EXPECT_EQ(decoded->describe(), version.describe()) << text;
    EXPECT_EQ(decoded->cache_key(), version.cache_key()) << text;
  }
  const auto none = ObjectVersion::decode(ObjectVersion().encode());
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

// What an earlier build wrote (versions as messages name them) and damaged text name no version
// this build reads.
TEST(ObjectVersion, TextOfAnotherFormIsNoVersion) {
  for (const std::string text :
       {"ETag \"a1\"", "generation 7", "Last-Modified Tue, 01 Dec 2026 05:00:00 GMT",
        "inode 12 of device 2049, 4096 bytes, modified 2026-12-01 05:40:01.123456789 UTC",
        "blob 3a7b", "memory", "", "etag settled", "etag maybe \"a1\" x",
        "etag settled  https://x/y", "etag settled %2 x", "file settled 1:2:3 /m",
        "file settled 1:2:3:x /m", "tag settled \"a1\" x"}) {
    EXPECT_FALSE(ObjectVersion::decode(text).has_value()) << text;
  }
}

}  // namespace tensorstream::object_version_tests
