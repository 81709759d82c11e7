#include "streaming/group_agreement.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/local_group.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/object_version.hpp"

namespace tensorstream::group_agreement_tests {

const std::string blob = "az://models/llama/model.safetensors";
const std::string east = "https://east.blob.core.windows.net/models/llama/model.safetensors";
const std::string west = "https://west.blob.core.windows.net/models/llama/model.safetensors";

// What a member gathers of a plan of one file read at `version`.
std::string summary(const ObjectVersion& version) {
  return "'" + blob + "' with chunk_size 16 MiB\n2 tensors in 1 reads of 64 bytes (plan 00ff)\n" +
         blob + "\t" + version.encode();
}

// The message check_agreement() throws on rank 0 of two members, empty when they agree.
std::string disagreement(const ObjectVersion& first, const ObjectVersion& second) {
  testing::LocalGroup group(2);
  const std::vector<std::string> summaries{summary(first), summary(second)};
  try {
    detail::check_agreement(summaries, *group.member(0), blob);
  } catch (const Error& error) {
    return error.what();
  }
  return {};
}

TEST(GroupAgreement, MembersAgreeOnVersionsThatNameTheSameBytes) {
  EXPECT_EQ(disagreement(ObjectVersion::etag(east, "\"a\""), ObjectVersion::etag(east, "\"a\"")),
            "");
  // Whether a version is settled is what each member's own cache makes of it.
  EXPECT_EQ(disagreement(ObjectVersion::etag(east, "\"a\""),
                         ObjectVersion::etag(east, "\"a\"", false)),
            "");
  // An hf:// file's blob is the same bytes whichever commit each member resolved.
  EXPECT_EQ(disagreement(ObjectVersion::content("3a7b"), ObjectVersion::content("3a7b")), "");
  EXPECT_EQ(disagreement(ObjectVersion(), ObjectVersion()), "");
}

TEST(GroupAgreement, MembersThatReadTwoVersionsFailNamingBoth) {
  EXPECT_EQ(disagreement(ObjectVersion::etag(east, "\"a\""), ObjectVersion::etag(east, "\"b\"")),
            "streaming " + blob + " on rank 0: the members read different versions of " + blob +
                ": rank 0 read ETag \"a\", rank 1 read ETag \"b\"; it changed while they read "
                "the headers, restart the stream");
  EXPECT_EQ(disagreement(ObjectVersion::generation(east, "7"), ObjectVersion()),
            "streaming " + blob + " on rank 0: the members read different versions of " + blob +
                ": rank 0 read generation 7, rank 1 read a version its store could not name; it "
                "changed while they read the headers, restart the stream");
  // One URL, two storage accounts: two objects, whatever their ETags.
  EXPECT_NE(disagreement(ObjectVersion::etag(east, "\"a\""), ObjectVersion::etag(west, "\"a\"")),
            "");
}

}  // namespace tensorstream::group_agreement_tests
