// The Hub's documents and request targets, apart from any server.

#include "storage/hf/hub_api.hpp"

#include <gtest/gtest.h>

#include "storage/hf/hf_cache.hpp"
#include "storage/hf/repo_path.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::hub_api_test {

const std::string url = "hf://acme/llama@main";

TEST(HubApi, TargetsEncodeRevisionsWholeAndPathsBySegment) {
  EXPECT_EQ(hf::revision_target("", "acme/llama", "refs/pr/1"),
            "/api/models/acme/llama/revision/refs%2Fpr%2F1");
  EXPECT_EQ(hf::tree_target("/mirror", "acme/llama", "0123456789abcdef0123456789abcdef01234567"),
            "/mirror/api/models/acme/llama/tree/0123456789abcdef0123456789abcdef01234567"
            "?recursive=true&expand=false");
  EXPECT_EQ(hf::resolve_target("", "acme/llama", "c0ffee", "TP2/shard 0/a+b.traw"),
            "/acme/llama/resolve/c0ffee/TP2/shard%200/a%2Bb.traw");
}

TEST(HubApi, ReadsTheCommitOfARevision) {
  EXPECT_EQ(hf::parse_commit(R"({"id":"acme/llama","sha":"0123456789abcdef0123456789abcdef01234567"})",
                             url),
            "0123456789abcdef0123456789abcdef01234567");
  try {
    hf::parse_commit(R"({"id":"acme/llama","sha":"main"})", url);
    FAIL() << "accepted a revision without a commit";
  } catch (const FormatError& error) {
    EXPECT_STREQ(error.what(),
                 "hf://acme/llama@main: malformed revision from the Hub: sha \"main\" is no commit");
  }
  EXPECT_THROW(hf::parse_commit(R"({"id":"acme/llama"})", url), FormatError);
  EXPECT_THROW(hf::parse_commit("<html>", url), FormatError);
}

TEST(HubApi, ReadsFilesOfATreePageWithTheirBlobs) {
  const auto files = hf::parse_tree_page(
      R"([{"type":"directory","oid":"aa","size":0,"path":"TP2"},
          {"type":"file","oid":"1111111111111111111111111111111111111111","size":22,"path":"config.json"},
          {"type":"file","oid":"2222222222222222222222222222222222222222","size":5000000000,
           "path":"TP2/model.safetensors","lfs":{"oid":"abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789","size":5000000000,"pointerSize":134}}])",
      url);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "config.json");
  EXPECT_EQ(files[0].size, 22u);
  EXPECT_EQ(files[0].blob, "1111111111111111111111111111111111111111");
  EXPECT_EQ(files[1].size, 5000000000u);
  EXPECT_EQ(files[1].blob, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  EXPECT_THROW(hf::parse_tree_page(R"([{"type":"file","path":"a"}])", url), FormatError);
  EXPECT_THROW(hf::parse_tree_page(R"([{"type":"file","path":"/etc/passwd","size":1,"oid":"a"}])",
                                   url),
               FormatError);
  EXPECT_THROW(hf::parse_tree_page(R"([{"type":"file","path":"a/../../b","size":1,"oid":"a"}])",
                                   url),
               FormatError);
  EXPECT_THROW(hf::parse_tree_page(R"({"error":"x"})", url), FormatError);
  // Blob ids name files of the cache: nothing but hex digits of the right length.
  try {
    hf::parse_tree_page(R"([{"type":"file","path":"a","size":1,"oid":"0","lfs":{"oid":"../../x"}}])",
                        url);
    FAIL() << "accepted a blob id that is a path";
  } catch (const FormatError& error) {
    EXPECT_STREQ(error.what(), "hf://acme/llama@main: malformed tree listing from the Hub: oid of "
                               "a \"../../x\" is no SHA-256");
  }
  EXPECT_THROW(hf::parse_tree_page(R"([{"type":"file","path":"a","size":1,"oid":""}])", url),
               FormatError);
}

TEST(HubApi, FollowsOnlyNextLinksOnTheHubsOwnServer) {
  const std::string origin = "https://huggingface.co";
  EXPECT_EQ(hf::next_page_target("", origin, url), std::nullopt);
  EXPECT_EQ(hf::next_page_target(
                R"(<https://huggingface.co/api/models/a/b/tree/c?recursive=true&cursor=Zm9v>; rel="next")",
                origin, url),
            "/api/models/a/b/tree/c?recursive=true&cursor=Zm9v");
  EXPECT_EQ(hf::next_page_target(R"(</x?cursor=1>; rel="prev", </y?cursor=2>; rel="next")",
                                 origin, url),
            "/y?cursor=2");
  EXPECT_EQ(hf::next_page_target(R"(</x?cursor=1>; rel="prev")", origin, url), std::nullopt);
  EXPECT_THROW(hf::next_page_target(R"(<https://evil.example/x>; rel="next")", origin, url),
               FormatError);
  EXPECT_THROW(hf::next_page_target(R"(<https://huggingface.co.evil.example/x>; rel="next")",
                                    origin, url),
               FormatError);
}

TEST(HubApi, SplitsKeysIntoRepositoryRevisionAndPath) {
  const auto plain = hf::parse_repo_path("acme", "/llama", url);
  EXPECT_EQ(plain.repo, "acme/llama");
  EXPECT_EQ(plain.revision, "main");
  EXPECT_EQ(plain.path, "");
  EXPECT_EQ(plain.repo_key, "/llama");
  const auto pinned = hf::parse_repo_path("acme", "/llama@refs%2Fpr%2F1/TP2/a.traw", url);
  EXPECT_EQ(pinned.revision, "refs/pr/1");
  EXPECT_EQ(pinned.path, "TP2/a.traw");
  EXPECT_EQ(pinned.repo_key, "/llama@refs%2Fpr%2F1");
  EXPECT_THROW(hf::parse_repo_path("acme", "/llama@..%2F..%2Fetc", url), InvalidArgument);
  EXPECT_THROW(hf::parse_repo_path("acme", "/llama@refs%2F%2Fpr", url), InvalidArgument);
  EXPECT_FALSE(hf::is_hub_name("-llama"));
  EXPECT_FALSE(hf::is_hub_name("lla..ma"));
  EXPECT_TRUE(hf::is_hub_name("Llama-3.1_8B"));
  // models--a--b--c would be both a/b--c and a--b/c.
  EXPECT_FALSE(hf::is_hub_name("b--c"));
}

TEST(HubApi, CacheFoldersAreNamedAsHuggingfaceHubNamesThem) {
  EXPECT_EQ(hf::repo_folder("/c", "meta-llama/Llama-3.1-8B"), "/c/models--meta-llama--Llama-3.1-8B");
  EXPECT_EQ(hf::snapshot_file("/c", "a/b", "c0ffee", "TP2/x.traw"),
            "/c/models--a--b/snapshots/c0ffee/TP2/x.traw");
}

}  // namespace tensorstream::hub_api_test
