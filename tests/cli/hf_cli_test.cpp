// The CLI over hf://, against the Hub fixture: ls, stream with the checksums of the local files,
// one-line errors, a token kept out of every trace, and the seed's flow in one command:
// `partition hf://ORG/NAME s3://bucket/raw/NAME/`, which writes what partitioning a local copy
// writes, byte for byte.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/byte_size.hpp"
#include "storage/hf/hf_test_environment.hpp"
#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/hub_fixture_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/sha256.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/store/attached_rank.hpp"

namespace tensorstream::hf_cli_tests {

using testing::HubFixtureServer;
using testing::lines_of;
using testing::run_cli;
using testing::summary_value;
using testing::TempDir;

constexpr const char* token = "hf_fixture_token_0123456789";

// The tests need no server but the fixture's, so none of them skips.
class HfCli : public hf::testing::HfEnvironmentTest {
 protected:
  HfCli() {
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    commit_ = hub_.commit_directory("acme/tiny", model_.path());
  }

  std::string size_line(const std::string& name) const {
    char line[256];
    std::snprintf(line, sizeof line, "%12llu  hf://acme/tiny/%s",
                  static_cast<unsigned long long>(std::filesystem::file_size(model_.path() / name)),
                  name.c_str());
    return line;
  }

  // What `prefetch hf://acme/tiny --to-hf-cache --include-safetensors` prints.
  std::string prefetched_line() const {
    std::uint64_t total = 0;
    for (const auto& name : testing::files_under(model_.path())) {
      total += std::filesystem::file_size(model_.path() / name);
    }
    return "prefetched 6 files (" + format_byte_size(total) +
           ") from hf://acme/tiny to the Hugging Face cache at " + snapshot().string() + "\n";
  }

  // The repository's folder in the Hugging Face cache, and its snapshot of commit_.
  std::filesystem::path repo() const {
    return home() / ".cache/huggingface/hub/models--acme--tiny";
  }
  std::filesystem::path snapshot() const { return repo() / "snapshots" / commit_; }

  TempDir model_;
  std::string commit_;
};

// Partitioning from the Hub into s3rver.
class HfPartitionCli : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    hub_.commit_directory("acme/tiny", model_.path());
    hf_environment_.set("HF_ENDPOINT", hub_.endpoint());
  }

  HubFixtureServer hub_{{}};
  testing::ScopedEnvironment hf_environment_{{"HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                              "HF_TOKEN_PATH", "HF_HOME", "HF_HUB_CACHE",
                                              "HF_HUB_OFFLINE", "XDG_CACHE_HOME"}};
  TempDir model_;
};

TEST_F(HfCli, LsListsTheFilesOfTheCommitWithSizes) {
  const auto result = run_cli({"ls", "hf://acme/tiny/"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 7u) << result.out;
  EXPECT_EQ(lines[0], size_line("config.json"));
  EXPECT_EQ(lines[2], size_line("model-00001-of-00002.safetensors"));
  EXPECT_EQ(lines[5], size_line("tokenizer.json"));
  EXPECT_TRUE(lines[6].starts_with("6 objects, ")) << lines[6];
}

TEST_F(HfCli, InspectAndBenchTakeHfUrlsAsEveryOtherSource) {
  const auto local = run_cli({"inspect", model_.path().string() + "/"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote = run_cli({"inspect", "hf://acme/tiny"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(lines_of(remote.out).size(), lines_of(local.out).size());
  EXPECT_NE(remote.out.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos)
      << remote.out;
  const auto bench = run_cli({"bench", "hf://acme/tiny", "--chunk-size", "1MiB", "--concurrency",
                              "4", "--repeat", "1", "--json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("\"chunk_size\":1048576"), std::string::npos) << bench.out;
}

TEST_F(HfCli, StreamGivesTheChecksumsOfTheLocalFilesAndNeverPrintsTheToken) {
  hub_.make_gated("acme/tiny");
  set("HF_TOKEN", token);
  const auto local = run_cli({"stream", model_.path().string() + "/", "--checksum", "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote = run_cli({"stream", "hf://acme/tiny@" + commit_, "--checksum", "sha256",
                               "--chunk-size", "100KB", "-vv"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out), testing::sorted_tensor_lines(local.out));
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out).size(),
            llama_tensors(synthetic_preset("tiny")).size());
  // The -vv trace shows the requests to the Hub and the CDN, never the token.
  EXPECT_NE(remote.err.find(hub_.endpoint() + "/api/models/acme/tiny/revision/" + commit_),
            std::string::npos)
      << remote.err;
  EXPECT_NE(remote.err.find(hub_.cdn_endpoint() + "/repos/"), std::string::npos) << remote.err;
  EXPECT_NE(remote.err.find("(token from HF_TOKEN)"), std::string::npos) << remote.err;
  EXPECT_EQ(remote.err.find(token), std::string::npos) << remote.err;
  EXPECT_EQ(remote.out.find(token), std::string::npos) << remote.out;
  EXPECT_EQ(hub_.leaked_tokens(), 0);
}

TEST_F(HfCli, ErrorsAreOneLineNamingTheRepositoryAndRevision) {
  hub_.make_gated("acme/tiny");
  const auto gated = run_cli({"stream", "hf://acme/tiny"});
  EXPECT_EQ(gated.exit_code, 1);
  EXPECT_EQ(gated.err, "tensorstream: error: hf://acme/tiny@main: the repository is gated: "
                       "accept its license at " + hub_.endpoint() +
                       "/acme/tiny and use a token with access; no token was sent (none in "
                       "HF_TOKEN, HUGGING_FACE_HUB_TOKEN or " + home().string() +
                       "/.cache/huggingface/token) (HTTP 403)\n");

  set("HF_TOKEN", token);
  const auto revision = run_cli({"stream", "hf://acme/tiny@v2"});
  EXPECT_EQ(revision.exit_code, 1);
  EXPECT_EQ(revision.err,
            "tensorstream: error: hf://acme/tiny@v2: no such revision of acme/tiny (HTTP 404)\n");

  const auto file = run_cli({"stream", "hf://acme/tiny/model.safetensors"});
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_EQ(file.err, "tensorstream: error: hf://acme/tiny/model.safetensors: no such file in "
                      "commit " + commit_ + " of acme/tiny (revision main)\n");

  const auto dataset = run_cli({"ls", "hf://datasets/acme/squad/"});
  EXPECT_EQ(dataset.exit_code, 2);
  EXPECT_EQ(dataset.err, "tensorstream: error: hf://datasets/acme/squad/: only model "
                         "repositories are read, not datasets\n");
}

// A mirror in HF_ENDPOINT that answers bare 404s, without the Hub's X-Error-Code.
class HfMirrorCli : public hf::testing::HfEnvironmentTest {
 protected:
  HfMirrorCli() : HfEnvironmentTest({.bare_errors = true}) {
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 1});
    hub_.commit_directory("acme/tiny", model_.path());
  }

  TempDir model_;
};

TEST_F(HfMirrorCli, AMissingRevisionIsNamedAsTheHubNamesIt) {
  const auto revision = run_cli({"stream", "hf://acme/tiny@v2"});
  EXPECT_EQ(revision.exit_code, 1);
  EXPECT_EQ(revision.err,
            "tensorstream: error: hf://acme/tiny@v2: no such revision of acme/tiny (HTTP 404)\n");
}

// A --cache entry of an hf:// file is its blob's, not its commit's: a commit that changes only
// the README leaves every weight to the cache, as the Hub's own cache shares blobs across commits.
TEST_F(HfCli, ACommitThatChangesOnlyTheReadmeLeavesTheWeightsToTheCache) {
  TempDir cache;
  const std::vector<std::string> arguments = {"stream", "hf://acme/tiny", "--json", "--checksum",
                                              "sha256", "--cache", cache.path().string()};
  const auto local = run_cli({"stream", model_.path().string() + "/", "--json", "--checksum",
                              "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto cold = run_cli(arguments);
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_EQ(testing::sorted_tensor_lines(cold.out), testing::sorted_tensor_lines(local.out));
  const auto downloads = hub_requests("/acme/tiny/resolve/").size();
  const auto cdn_downloads = hub_.cdn_requests().size();

  testing::write_file(model_.path() / "README.md", "# tiny\n\nA model card, edited.\n");
  ASSERT_NE(hub_.commit_directory("acme/tiny", model_.path()), commit_);
  const auto warm = run_cli(arguments);
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(testing::sorted_tensor_lines(warm.out), testing::sorted_tensor_lines(local.out));
  // Every byte the first stream read, headers and index included, now from the cache.
  EXPECT_EQ(summary_value(warm.out, "source_bytes"), 0) << warm.out;
  EXPECT_EQ(summary_value(warm.out, "cache_bytes"),
            summary_value(cold.out, "source_bytes") + summary_value(cold.out, "cache_bytes"))
      << cold.out << warm.out;
  EXPECT_EQ(hub_requests("/acme/tiny/resolve/").size(), downloads);
  EXPECT_EQ(hub_.cdn_requests().size(), cdn_downloads);
}

TEST_F(HfPartitionCli, PartitionFromTheHubWritesWhatPartitioningALocalCopyWrites) {
  TempDir work;
  const auto local = run_cli({"partition", model_.path().string(),
                              (work.path() / "local").string(), "--tp", "1,2"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote = run_cli({"partition", "hf://acme/tiny", "s3://models/raw/tiny/", "--tp",
                               "1,2"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_NE(remote.out.find(" from hf://acme/tiny for TP 1,2 into 63 traw objects"),
            std::string::npos)
      << remote.out;
  const auto copied = run_cli({"cp", "-r", "s3://models/raw/tiny/",
                               (work.path() / "copied").string() + "/", "--progress", "never"});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  const auto root = work.path() / "copied";
  const auto files = testing::files_under(work.path() / "local");
  ASSERT_EQ(files, testing::files_under(root));
  EXPECT_EQ(files.size(), 66u);
  for (const auto& name : files) {
    EXPECT_EQ(testing::read_file(root / name), testing::read_file(work.path() / "local" / name))
        << name;
  }
}

TEST_F(HfCli, PrefetchToTheHfCacheWritesHuggingFaceHubsLayoutThatOfflineStreamsRead) {
  const auto result = run_cli({"prefetch", "hf://acme/tiny", "--to-hf-cache",
                               "--include-safetensors"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, prefetched_line());
  EXPECT_EQ(testing::read_file(repo() / "refs/main"), commit_);
  for (const auto& name : testing::files_under(model_.path())) {
    const auto link = snapshot() / name;
    ASSERT_TRUE(std::filesystem::is_symlink(link)) << name;
    EXPECT_TRUE(std::filesystem::read_symlink(link).string().starts_with("../../blobs/")) << name;
    EXPECT_EQ(testing::read_file(link), testing::read_file(model_.path() / name)) << name;
  }
  const auto large = snapshot() / "model-00001-of-00002.safetensors";
  const auto bytes = testing::read_file(large);
  EXPECT_EQ(std::filesystem::read_symlink(large).filename().string(),
            testing::sha256_hex(std::as_bytes(std::span(bytes.data(), bytes.size()))));

  const auto requests = hub_.hub_requests().size();
  set("HF_HUB_OFFLINE", "1");
  const auto local = run_cli({"stream", model_.path().string() + "/", "--checksum", "sha256"});
  const auto offline = run_cli({"stream", "hf://acme/tiny", "--checksum", "sha256"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_EQ(testing::sorted_tensor_lines(offline.out), testing::sorted_tensor_lines(local.out));
  EXPECT_EQ(hub_.hub_requests().size(), requests);
}

TEST_F(HfCli, CpToTheHfCacheTakesOneFileOrAPrefixAndNoDestination) {
  const auto one = run_cli({"cp", "hf://acme/tiny/config.json", "--to-hf-cache"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(testing::files_under(snapshot()), std::vector<std::string>{"config.json"});
  const auto all = run_cli({"cp", "-r", "hf://acme/tiny@" + commit_, "--to-hf-cache",
                            "--exclude", "*.safetensors"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(testing::files_under(snapshot()).size(), 4u);
  const auto both = run_cli({"cp", "-r", "hf://acme/tiny", "out", "--to-hf-cache"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err, "tensorstream: error: --to-hf-cache copies into the Hugging Face cache; "
                      "give no DST with it\n");
  const auto neither = run_cli({"cp", "-r", "hf://acme/tiny"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_EQ(neither.err, "tensorstream: error: cp needs a DST, or --to-hf-cache\n");
}

// A cache wraps the Hub's store; the export reads through it, so a second one, with the Hugging
// Face cache gone meanwhile, asks the Hub for the commit's files but for none of their bytes.
TEST_F(HfCli, ToTheHfCacheReadsThroughATensorstreamCache) {
  const auto cache = home() / "tensorstream-cache";
  const auto expect_the_model_in_the_snapshot = [&] {
    const auto files = testing::files_under(model_.path());
    ASSERT_EQ(testing::files_under(snapshot()), files);
    for (const auto& name : files) {
      EXPECT_EQ(testing::read_file(snapshot() / name), testing::read_file(model_.path() / name))
          << name;
    }
  };
  const auto copied = run_cli({"cp", "-r", "hf://acme/tiny", "--to-hf-cache", "--cache",
                               cache.string()});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  expect_the_model_in_the_snapshot();

  std::filesystem::remove_all(repo());
  const auto resolves = hub_requests("/acme/tiny/resolve/").size();
  const auto cdn = hub_.cdn_requests().size();
  const auto prefetched = run_cli({"prefetch", "hf://acme/tiny", "--to-hf-cache",
                                   "--include-safetensors", "--cache", cache.string()});
  ASSERT_EQ(prefetched.exit_code, 0) << prefetched.err;
  EXPECT_EQ(prefetched.out, prefetched_line());
  expect_the_model_in_the_snapshot();
  EXPECT_EQ(hub_requests("/acme/tiny/resolve/").size(), resolves);
  EXPECT_EQ(hub_.cdn_requests().size(), cdn);
}

// The seed's deployment: partition from the Hub, then serve the partitions from where they went
// (the Hub too, here) to workers that attach: what they attach to is what a server of the local
// partitions serves.
TEST_F(HfCli, ServeLoadsTrawPartitionsFromTheHubForWorkersToAttach) {
  TempDir work;
  const auto raw = work.path() / "raw";
  ASSERT_EQ(run_cli({"partition", "hf://acme/tiny", raw.string(), "--tp", "2"}).exit_code, 0);
  hub_.commit_directory("acme/tiny-raw", raw);
  std::vector<std::unique_ptr<testing::ChildProcess>> servers;
  for (const std::string& source : {std::string("hf://acme/tiny-raw"), raw.string()}) {
    const auto name = std::to_string(servers.size());
    servers.push_back(std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{TENSORSTREAM_CLI_PATH, "serve", source, "--tp", "2", "--socket",
                                 (work.path() / (name + ".sock")).string(), "--ready-file",
                                 (work.path() / (name + ".ready")).string()},
        work.path() / (name + ".log")));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const auto name = std::to_string(i);
    while (!std::filesystem::exists(work.path() / (name + ".ready"))) {
      ASSERT_FALSE(servers[i]->exited()) << testing::read_file(work.path() / (name + ".log"));
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "server " << name << " not ready";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  const store::AttachedRank from_hub = store::attach(work.path() / "0.sock", 1);
  const store::AttachedRank from_disk = store::attach(work.path() / "1.sock", 1);
  const auto& tensors = from_disk.manifest().tensors;
  ASSERT_EQ(from_hub.manifest().tensors.size(), tensors.size());
  EXPECT_GT(tensors.size(), 10u);
  for (const auto& entry : tensors) {
    if (entry.name.find("kv_cache") != std::string::npos) continue;
    const store::TensorEntry* served = from_hub.find(entry.name);
    ASSERT_NE(served, nullptr) << entry.name;
    const auto expected = from_disk.bytes(entry);
    const auto actual = from_hub.bytes(*served);
    ASSERT_EQ(actual.size(), expected.size()) << entry.name;
    EXPECT_TRUE(std::equal(actual.begin(), actual.end(), expected.begin())) << entry.name;
  }
  for (auto& server : servers) EXPECT_EQ(server->stop(), 0);
}

}  // namespace tensorstream::hf_cli_tests
