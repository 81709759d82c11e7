// HfStore against the Hub fixture: one commit per revision, tree pages, the redirect to the CDN
// and its expiry, the token's reach, the Hub's errors, Retry-After, the token chain and the local
// Hugging Face cache.

#include "tensorstream/storage/hf_store.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "storage/hf/hf_test_environment.hpp"
#include "support/error_of.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream::hf_store_test {

using testing::HubFixtureServer;
using testing::error_of;
using testing::random_bytes;

constexpr std::uint64_t large_size = 3 << 20;

class HfStoreTest : public hf::testing::HfEnvironmentTest {
 protected:
  explicit HfStoreTest(HubFixtureServer::Options options = {})
      : HfEnvironmentTest(std::move(options)) {
    commit_ = hub_.commit("acme/llama", files_);
  }

  // A store of organisation "acme", with quick retries.
  std::unique_ptr<HfStore> store(HfOptions options = {}) {
    HttpOptions http;
    http.max_retries = 3;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return std::make_unique<HfStore>(io_.get_executor(), Url::parse("hf://acme"), http,
                                     std::move(options));
  }

  std::string read(HfStore& store, const std::string& key, std::uint64_t offset,
                   std::size_t size) {
    return testing::read_string(io_, store, key, offset, size);
  }

  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return testing::run_task(io_, std::move(task));
  }

  boost::asio::io_context io_;
  const std::map<std::string, std::string> files_{
      {"config.json", R"({"model_type":"llama"})"},
      {"model.safetensors", random_bytes(large_size, 1)},
      {"TP2/shard0/weights.traw", random_bytes(5000, 2)},
      {"TP2/shard1/weights.traw", random_bytes(5001, 3)},
      {"tokenizer/tokenizer.json", random_bytes(300, 4)},
  };
  std::string commit_;
};

TEST_F(HfStoreTest, ReadsSmallFilesFromTheHubAndLargeOnesFromTheCdnWithoutTheToken) {
  set("HF_TOKEN", "hf_fixture_token_0123456789");
  auto hf = store();
  EXPECT_EQ(read(*hf, "/llama/config.json", 0, 22), files_.at("config.json"));
  EXPECT_EQ(read(*hf, "/llama/model.safetensors", 1000, 2 << 20),
            files_.at("model.safetensors").substr(1000, 2 << 20));
  EXPECT_EQ(read(*hf, "/llama@main/TP2/shard1/weights.traw", 7, 4994),
            files_.at("TP2/shard1/weights.traw").substr(7));

  ASSERT_FALSE(hub_.cdn_requests().empty());
  EXPECT_EQ(hub_.leaked_tokens(), 0);
  for (const auto& request : hub_.hub_requests()) {
    EXPECT_EQ(request.authorization, "Bearer hf_fixture_token_0123456789") << request.target;
  }
  for (const auto& request : hub_requests("/acme/llama/resolve/")) {
    EXPECT_TRUE(request.target.starts_with("/acme/llama/resolve/" + commit_ + "/"))
        << request.target;
  }
}

TEST_F(HfStoreTest, ResolvesTheRevisionOnceAndStaysOnItsCommitWhenTheBranchMoves) {
  auto hf = store();
  const auto& model = files_.at("model.safetensors");
  EXPECT_EQ(read(*hf, "/llama/model.safetensors", 0, 4096), model.substr(0, 4096));
  const std::string moved = hub_.commit("acme/llama", {{"model.safetensors",
                                                        random_bytes(large_size, 9)}});
  ASSERT_NE(moved, commit_);
  EXPECT_EQ(read(*hf, "/llama/model.safetensors", 4096, large_size - 4096), model.substr(4096));
  EXPECT_EQ(read(*hf, "/llama/config.json", 0, 22), files_.at("config.json"));

  EXPECT_EQ(hub_requests("/api/models/acme/llama/revision/").size(), 1u);
  const HfSnapshot snapshot = run(hf->snapshot("/llama/config.json"));
  EXPECT_EQ(snapshot.commit, commit_);
  EXPECT_EQ(snapshot.repo, "acme/llama");
  EXPECT_EQ(snapshot.files.size(), files_.size());

  // A new store resolves main again.
  EXPECT_EQ(run(store()->snapshot("/llama/")).commit, moved);
}

TEST_F(HfStoreTest, ListsEveryPageOfTheCommitsTree) {
  auto hf = store();
  const auto all = run(hf->list("/llama/", ListDepth::recursive));
  std::vector<std::string> keys;
  for (const auto& object : all) keys.push_back(object.key);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "/llama/TP2/shard0/weights.traw", "/llama/TP2/shard1/weights.traw",
                      "/llama/config.json", "/llama/model.safetensors",
                      "/llama/tokenizer/tokenizer.json"}));
  EXPECT_EQ(all[3].size, large_size);
  // Seven files and folders, two per page.
  EXPECT_EQ(hub_requests("/api/models/acme/llama/tree/").size(), 5u);

  const auto top = run(hf->list("/llama@" + commit_ + "/", ListDepth::one_level));
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].key, "/llama@" + commit_ + "/config.json");
  const auto shard = run(hf->list("/llama/TP2/shard1/", ListDepth::recursive));
  ASSERT_EQ(shard.size(), 1u);
  EXPECT_EQ(shard[0].size, 5001u);
  const Listing level = run(hf->list_level("/llama/TP2/"));
  EXPECT_EQ(level.prefixes, (std::vector<std::string>{"/llama/TP2/shard0/", "/llama/TP2/shard1/"}));
}

TEST_F(HfStoreTest, ReusesTheCdnUrlForEveryRangeOfAFile) {
  auto hf = store();
  const auto& model = files_.at("model.safetensors");
  for (std::uint64_t offset = 0; offset < large_size; offset += 1 << 20) {
    EXPECT_EQ(read(*hf, "/llama/model.safetensors", offset, 1 << 20), model.substr(offset, 1 << 20));
  }
  EXPECT_EQ(hub_requests("/acme/llama/resolve/").size(), 1u);
  EXPECT_EQ(hub_.cdn_requests().size(), 3u);
}

TEST_F(HfStoreTest, SizeAndStatComeFromTheTreeWithoutRequestsForTheFile) {
  auto hf = store();
  EXPECT_EQ(run(hf->size("/llama/model.safetensors")), large_size);
  EXPECT_EQ(run(hf->stat("/llama/tokenizer/tokenizer.json")).size, 300u);
  const auto& model = files_.at("model.safetensors");
  const ObjectStat stat = run(hf->stat("/llama/model.safetensors"));
  EXPECT_EQ(stat.size, large_size);
  EXPECT_EQ(stat.version.describe(),
            "blob " + testing::sha256_hex(std::as_bytes(std::span(model.data(), model.size()))));
  EXPECT_TRUE(hub_requests("/acme/").empty());
  EXPECT_TRUE(hub_.cdn_requests().empty());
}

// The version names the bytes, not the commit: a cache keyed by it keeps a file that a later
// commit leaves alone.
TEST_F(HfStoreTest, AFileANewCommitLeavesAloneKeepsItsVersion) {
  auto first = store();
  const ObjectStat model = run(first->stat("/llama/model.safetensors"));
  const ObjectStat config = run(first->stat("/llama/config.json"));
  auto files = files_;
  files["README.md"] = "# llama\n";
  files["config.json"] = R"({"model_type":"llama","tie_word_embeddings":true})";
  const std::string moved = hub_.commit("acme/llama", files);

  auto second = store();
  EXPECT_EQ(run(second->snapshot("/llama/")).commit, moved);
  EXPECT_EQ(run(second->stat("/llama/model.safetensors")).version, model.version);
  EXPECT_NE(run(second->stat("/llama/config.json")).version, config.version);
}

TEST_F(HfStoreTest, MissingRepositoryRevisionAndFileAreNotFoundNamingThem) {
  auto hf = store();
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/nope/model.safetensors", 0, 1); }),
            "hf://acme/nope@main: no such repository acme/nope, or a private one: no token was "
            "sent (none in HF_TOKEN, HUGGING_FACE_HUB_TOKEN or " +
                (home() / ".cache/huggingface/token").string() + ") (HTTP 401)");
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/llama@v9/model.safetensors", 0, 1); }),
            "hf://acme/llama@v9: no such revision of acme/llama (HTTP 404)");
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/llama/missing.safetensors", 0, 1); }),
            "hf://acme/llama/missing.safetensors: no such file in commit " + commit_ +
                " of acme/llama (revision main)");
  EXPECT_EQ(error_of<StorageError>([&] { read(*hf, "/llama/config.json", 20, 3); }),
            "hf://acme/llama/config.json: bytes 20-22 lie past the end of the file (22 bytes)");
}

TEST_F(HfStoreTest, GatedRepositorySaysWhereToAcceptTheLicense) {
  hub_.commit("acme/gated", {{"model.safetensors", random_bytes(100, 5)}});
  hub_.make_gated("acme/gated");
  auto hf = store();
  EXPECT_EQ(error_of<StorageError>([&] { read(*hf, "/gated/model.safetensors", 0, 1); }),
            "hf://acme/gated@main: the repository is gated: accept its license at " +
                hub_.endpoint() + "/acme/gated and use a token with access; no token was sent "
                "(none in HF_TOKEN, HUGGING_FACE_HUB_TOKEN or " +
                (home() / ".cache/huggingface/token").string() + ") (HTTP 403)");
  // Not retried: one request.
  EXPECT_EQ(hub_requests("/api/models/acme/gated/").size(), 1u);

  auto with_token = store({.token = "hf_fixture_token_0123456789"});
  EXPECT_EQ(read(*with_token, "/gated/model.safetensors", 0, 100), random_bytes(100, 5));
}

TEST_F(HfStoreTest, ARefusedTokenNamesWhereItCameFromButNeverItsValue) {
  set("HF_TOKEN", "hf_wrong_secret_token");
  auto hf = store();
  const std::string message =
      error_of<StorageError>([&] { read(*hf, "/llama/config.json", 0, 1); });
  EXPECT_EQ(message, "hf://acme/llama@main: the Hub refused the token from HF_TOKEN: Invalid "
                     "credentials in Authorization header (HTTP 401)");
  EXPECT_EQ(hub_.hub_requests().size(), 1u);
}

TEST_F(HfStoreTest, TokensComeFromHfTokenThenTheOldVariableThenTheTokenFile) {
  hub_.make_gated("acme/llama");
  const std::string good = "hf_fixture_token_0123456789";
  set("HF_HOME", (home() / "hf").string());
  write("hf/token", good + "\n");
  EXPECT_EQ(read(*store(), "/llama/config.json", 0, 22), files_.at("config.json"));
  EXPECT_NE(store()->describe().find("(token from the token file " +
                                     (home() / "hf/token").string() + ")"),
            std::string::npos)
      << store()->describe();

  set("HUGGING_FACE_HUB_TOKEN", good);
  write("hf/token", "hf_stale");
  EXPECT_NE(store()->describe().find("(token from HUGGING_FACE_HUB_TOKEN)"), std::string::npos);
  EXPECT_EQ(read(*store(), "/llama/config.json", 0, 22), files_.at("config.json"));

  set("HF_TOKEN", "hf_wrong");
  EXPECT_NE(error_of<StorageError>([&] { read(*store(), "/llama/config.json", 0, 1); })
                .find("refused the token from HF_TOKEN"),
            std::string::npos);

  unset("HF_TOKEN");
  unset("HUGGING_FACE_HUB_TOKEN");
  set("HF_TOKEN_PATH", write("elsewhere/token", good).string());
  EXPECT_EQ(read(*store(), "/llama/config.json", 0, 22), files_.at("config.json"));
  EXPECT_NE(store({.anonymous = true})->describe().find("(no token: anonymous)"),
            std::string::npos);
}

TEST_F(HfStoreTest, ATokenThatIsNoOneWordIsRefusedWithoutQuotingIt) {
  set("HF_TOKEN", "hf_fixture\r\nX-Injected: 1");
  EXPECT_EQ(error_of<InvalidArgument>([&] { store(); }),
            "the Hugging Face token from HF_TOKEN holds spaces or control characters; a token is "
            "one word");
  EXPECT_TRUE(hub_.hub_requests().empty());
}

TEST_F(HfStoreTest, OfflineNeedsACacheToRead) {
  set("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(error_of<InvalidArgument>([&] { store({.read_cache = false}); }),
            "HF_HUB_OFFLINE reads only the Hugging Face cache, which HfOptions::read_cache = "
            "false forbids");
  unset("HOME");
  EXPECT_EQ(error_of<InvalidArgument>([&] { store(); }),
            "HF_HUB_OFFLINE reads the Hugging Face cache, which is nowhere: set HF_HUB_CACHE, "
            "HF_HOME or HOME");
}

class HfThrottledTest : public HfStoreTest {
 protected:
  HfThrottledTest() : HfStoreTest({.throttle_first = 1, .retry_after_seconds = 1}) {}
};

TEST_F(HfThrottledTest, A429IsRetriedAfterItsRetryAfter) {
  auto hf = store();
  EXPECT_EQ(read(*hf, "/llama/config.json", 0, 22), files_.at("config.json"));
  const auto requests = hub_.hub_requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, requests[1].target);
  // The client's own backoff here is at most 2 ms; the server asked for a second.
  EXPECT_GE(requests[1].received - requests[0].received, std::chrono::seconds(1));
}

class HfExpiringCdnTest : public HfStoreTest {
 protected:
  HfExpiringCdnTest() : HfStoreTest({.cdn_url_uses = 2}) {}
};

TEST_F(HfExpiringCdnTest, AnExpiredCdnUrlIsResolvedAgainAndTheReadGoesOn) {
  auto hf = store();
  const auto& model = files_.at("model.safetensors");
  constexpr std::size_t piece = 512 << 10;
  for (std::uint64_t offset = 0; offset < large_size; offset += piece) {
    ASSERT_EQ(read(*hf, "/llama/model.safetensors", offset, piece), model.substr(offset, piece));
  }
  // Six ranges, two per signed URL: three resolutions; each expiry costs one refused request.
  EXPECT_EQ(hub_requests("/acme/llama/resolve/").size(), 3u);
  EXPECT_EQ(hub_.cdn_requests().size(), 8u);
}

TEST_F(HfStoreTest, FilesOfTheCommitInTheLocalCacheAreReadFromThereWithoutRequests) {
  const auto cache = home() / "hf-cache";
  set("HF_HUB_CACHE", cache.string());
  write_hf_cache(cache, "acme/llama", commit_,
                 {{"model.safetensors", files_.at("model.safetensors")},
                  {"config.json", "not the size the Hub lists"}});
  auto hf = store();
  EXPECT_EQ(read(*hf, "/llama/model.safetensors", 100, 1 << 20),
            files_.at("model.safetensors").substr(100, 1 << 20));
  EXPECT_EQ(read(*hf, "/llama/config.json", 0, 22), files_.at("config.json"));
  EXPECT_TRUE(hub_.cdn_requests().empty());
  const auto resolved = hub_requests("/acme/llama/resolve/");
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].target, "/acme/llama/resolve/" + commit_ + "/config.json");

  // Told not to, the store reads the Hub.
  auto uncached = store({.read_cache = false});
  EXPECT_EQ(read(*uncached, "/llama/model.safetensors", 0, 10),
            files_.at("model.safetensors").substr(0, 10));
  EXPECT_EQ(hub_.cdn_requests().size(), 1u);
}

TEST_F(HfStoreTest, OfflineReadsOnlyTheCache) {
  const auto cache = home() / ".cache/huggingface/hub";
  write_hf_cache(cache, "acme/llama", commit_,
                 {{"model.safetensors", files_.at("model.safetensors")},
                  {"tokenizer/tokenizer.json", files_.at("tokenizer/tokenizer.json")}});
  set("HF_HUB_OFFLINE", "1");
  auto hf = store();
  EXPECT_EQ(hf->describe(), "offline, cache " + cache.string());
  EXPECT_EQ(read(*hf, "/llama/model.safetensors", 7, 1000),
            files_.at("model.safetensors").substr(7, 1000));
  const auto listed = run(hf->list("/llama/", ListDepth::recursive));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1].key, "/llama/tokenizer/tokenizer.json");
  EXPECT_EQ(listed[1].size, 300u);
  EXPECT_EQ(read(*hf, "/llama@" + commit_ + "/tokenizer/tokenizer.json", 0, 300),
            files_.at("tokenizer/tokenizer.json"));
  EXPECT_TRUE(hub_.hub_requests().empty());
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/llama@v2/config.json", 0, 1); }),
            "hf://acme/llama@v2: offline (HF_HUB_OFFLINE), and the Hugging Face cache has no "
            "revision v2 of acme/llama (no commit in " +
                (cache / "models--acme--llama/refs/v2").string() + ")");
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/llama/config.json", 0, 1); }),
            "hf://acme/llama/config.json: no such file in commit " + commit_ +
                " of acme/llama (revision main)");
}

TEST_F(HfStoreTest, RevisionsMayBeTagsCommitsOrPercentEncodedRefs) {
  const std::string pr = hub_.commit("acme/llama", {{"a.bin", "pr"}}, "refs/pr/1");
  auto hf = store();
  EXPECT_EQ(read(*hf, "/llama@refs%2Fpr%2F1/a.bin", 0, 2), "pr");
  // Messages spell the revision as the URL did, so that it can be pasted back.
  EXPECT_EQ(error_of<NotFoundError>([&] { read(*hf, "/nope@refs%2Fpr%2F1/a.bin", 0, 1); })
                .substr(0, 46),
            "hf://acme/nope@refs%2Fpr%2F1: no such reposito");
  EXPECT_EQ(hub_requests("/api/models/acme/llama/revision/refs%2Fpr%2F1").size(), 1u);
  EXPECT_EQ(run(hf->snapshot("/llama@" + commit_ + "/")).commit, commit_);
  EXPECT_EQ(run(hf->snapshot("/llama@refs%2Fpr%2F1/")).commit, pr);
}

TEST_F(HfStoreTest, OnlyModelRepositoriesWithValidNamesAreAccepted) {
  boost::asio::io_context io;
  StoreOptions options;
  const auto message = [&](const std::string& url) {
    return error_of<InvalidArgument>([&] {
      const auto opened = open_store(Url::parse(url), io.get_executor(), options);
      testing::read_string(io, *opened, Url::parse(url).path, 0, 1);
    });
  };
  EXPECT_EQ(message("hf://datasets/squad/train.json"),
            "hf://datasets/squad/train.json: only model repositories are read, not datasets");
  EXPECT_EQ(message("hf://gpt2"),
            "hf://gpt2/: name a repository, as hf://ORG/NAME[@REVISION][/PATH]");
  EXPECT_EQ(message("hf://acme/ba$d/model.safetensors"),
            "hf://acme/ba$d/model.safetensors: 'ba$d' is no repository name (letters, digits, "
            "'-', '_' and '.')");
  EXPECT_EQ(message("hf://acme/llama@/model.safetensors"),
            "hf://acme/llama@/model.safetensors: the revision after '@' must be a branch, tag or "
            "commit");
}

}  // namespace tensorstream::hf_store_test
