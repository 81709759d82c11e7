// The local cache tier end to end: `tensorstream stream --cache DIR` (and `serve`, `partition`)
// over a real nginx, with the bytes nginx served counted from its access log, and over s3rver,
// with its object reads counted by a proxy in front of it.

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/byte_size.hpp"
#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/fault_proxy.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/skip.hpp"
#include "support/small_disk.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::FaultProxy;
using testing::NginxServer;
using testing::run_cli;
using testing::SmallDisk;
using testing::sorted_tensor_lines;
using testing::summary_value;
using testing::TempDir;

// The data files of every entry under the cache `root`.
std::vector<fs::path> entry_data_files(const fs::path& root) {
  std::vector<fs::path> files;
  if (!fs::exists(root / "objects")) return files;
  for (const auto& file : fs::recursive_directory_iterator(root / "objects")) {
    if (file.path().filename() == "data") files.push_back(file.path());
  }
  return files;
}

class CacheCli : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model((models_.path() / "m").string(), {.preset = "tiny"});
    testing::age_files(models_.path() / "m");
    file_size_ = fs::file_size(model_file());
  }

  fs::path model_file() const { return models_.path() / "m" / "model.safetensors"; }
  fs::path cache() const { return cache_.path() / "cache"; }
  fs::path access_log() const { return logs_.path() / "access.log"; }

  // nginx over the models, its access log on; `extra` adds directives.
  void start_nginx(const std::string& extra = "") {
    if (!NginxServer::available()) GTEST_SKIP() << "nginx is not installed";
    nginx_ = std::make_unique<NginxServer>(NginxServer::Options{
        .root = models_.path(), .extra_config = "access_log " + access_log().string() + ";" + extra});
    url_ = nginx_->base_url() + "/m/model.safetensors";
  }

  std::uint64_t served() const {
    return fs::exists(access_log()) ? testing::served_bytes(access_log()) : 0;
  }

  // `stream URL --json --checksum sha256 --chunk-size 64KiB --cache DIR` and `more`.
  std::vector<std::string> stream_arguments(std::vector<std::string> more = {}) const {
    std::vector<std::string> arguments = {"stream", url_, "--json", "--checksum", "sha256",
                                          "--chunk-size", "64KiB", "--cache", cache().string()};
    arguments.insert(arguments.end(), more.begin(), more.end());
    return arguments;
  }

  // The same as a child process's argv.
  std::vector<std::string> stream_argv(std::vector<std::string> more = {}) const {
    std::vector<std::string> argv = stream_arguments(std::move(more));
    argv.insert(argv.begin(), TENSORSTREAM_CLI_PATH);
    return argv;
  }

  testing::ProcessResult stream(std::vector<std::string> more = {}) {
    return run_cli(stream_arguments(std::move(more)));
  }

  // Runs `serve SOURCE --tp 1` with `more` until it is ready, and returns the tensor lines
  // `attach --rank 0 --json --checksum sha256` prints of what it serves; stops it after.
  std::vector<std::string> served_tensors(const std::string& source,
                                          std::vector<std::string> more = {}) {
    const fs::path socket = logs_.path() / "store.sock";
    const fs::path ready = logs_.path() / "ready.json";
    const fs::path log = logs_.path() / "serve.log";
    std::vector<std::string> argv = {TENSORSTREAM_CLI_PATH, "serve", source, "--tp", "1",
                                     "--socket", socket.string(), "--ready-file", ready.string()};
    argv.insert(argv.end(), more.begin(), more.end());
    ChildProcess server(argv, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(ready)) {
      if (server.exited() || std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "serve did not become ready: " << testing::read_text_file(log);
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const auto attached = run_cli({"attach", socket.string(), "--rank", "0", "--json",
                                   "--checksum", "sha256"});
    EXPECT_EQ(attached.exit_code, 0) << attached.err;
    const int status = server.stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::read_text_file(log);
    return sorted_tensor_lines(attached.out);
  }

  // What the file's tensors are, read from the file itself.
  std::vector<std::string> oracle() {
    const auto local = run_cli({"stream", model_file().string(), "--json", "--checksum", "sha256"});
    EXPECT_EQ(local.exit_code, 0) << local.err;
    return sorted_tensor_lines(local.out);
  }

  TempDir models_;
  TempDir cache_;
  TempDir logs_;
  std::unique_ptr<NginxServer> nginx_;
  std::string url_;
  std::uint64_t file_size_ = 0;
};

TEST_F(CacheCli, AColdLoadFillsTheCacheAndTheNextMakesNoDataRequest) {
  start_nginx();
  const auto expected = oracle();
  const auto cold = stream();
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_EQ(sorted_tensor_lines(cold.out), expected);
  // A tensor read that overlaps the header's first read may find that range cached already.
  EXPECT_LE(summary_value(cold.out, "cache_bytes"), 64 * 1024);
  const std::uint64_t cold_served = served();
  EXPECT_GE(cold_served, file_size_ - 1024);  // all but padding nobody reads

  const auto warm = stream();
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(sorted_tensor_lines(warm.out), expected);
  EXPECT_EQ(served(), cold_served) << "the warm load fetched data";
  EXPECT_EQ(summary_value(warm.out, "source_bytes"), 0);
  EXPECT_GE(summary_value(warm.out, "cache_bytes"), summary_value(warm.out, "bytes"));
}

TEST_F(CacheCli, AnEntryOutOfThePageCacheIsReadWithDirectIoAndChecked) {
  start_nginx();
  const auto expected = oracle();
  // At the default chunk size: ranges of whole tensors, as a load would read them.
  const auto load = [&] {
    return run_cli({"stream", url_, "--json", "--checksum", "sha256", "--cache", cache().string()});
  };
  ASSERT_EQ(load().exit_code, 0);
  const auto data = entry_data_files(cache());
  ASSERT_EQ(data.size(), 1u);
  const auto evict = [&] {
    const int fd = ::open(data[0].c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  };
  evict();
  const std::uint64_t filled = served();
  const auto cold = load();
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_EQ(sorted_tensor_lines(cold.out), expected);
  EXPECT_EQ(served(), filled) << cold.err;
  if (summary_value(cold.out, "direct_bytes") <= 0) {
    GTEST_SKIP() << "the file system of " << cache() << " refuses direct I/O";
  }
  // A damaged range read with direct I/O is caught as one read through the page cache is.
  {
    std::fstream file(data[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(file_size_ / 2));
    file.put('\x11');
    file.put('\x22');
  }
  evict();
  const auto damaged = load();
  ASSERT_EQ(damaged.exit_code, 0) << damaged.err;
  EXPECT_EQ(sorted_tensor_lines(damaged.out), expected);
  EXPECT_NE(damaged.err.find("do not match their hash"), std::string::npos) << damaged.err;
}

TEST_F(CacheCli, AnObjectRewrittenAtTheSourceIsFetchedAgain) {
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const std::uint64_t first = served();
  // Same size, other bytes, a later mtime: nginx's ETag changes.
  testing::invert_tensor_data(model_file());
  fs::last_write_time(model_file(), fs::last_write_time(model_file()) + std::chrono::seconds(5));
  const auto expected = oracle();
  const auto again = stream();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(sorted_tensor_lines(again.out), expected);
  EXPECT_GE(served() - first, file_size_ - 1024);
  EXPECT_LE(summary_value(again.out, "cache_bytes"), 64 * 1024);
  EXPECT_EQ(entry_data_files(cache()).size(), 2u) << "one entry per version";
}

TEST_F(CacheCli, AnIncludedPartThenTheWholeFetchesEachByteOnce) {
  start_nginx();
  const auto part = stream({"--include", "*layers.0.*"});
  ASSERT_EQ(part.exit_code, 0) << part.err;
  const std::uint64_t part_served = served();
  ASSERT_GT(part_served, 0u);
  ASSERT_LT(part_served, file_size_ / 2);
  const auto whole = stream();
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(sorted_tensor_lines(whole.out), oracle());
  EXPECT_GT(summary_value(whole.out, "cache_bytes"), 0);
  // Each tensor byte once over both loads; the header's first read may be served once more.
  EXPECT_LE(served(), file_size_ + 64 * 1024);
}

TEST_F(CacheCli, AFlippedByteInTheCacheIsDetectedAndFetchedAgain) {
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const std::uint64_t cold_served = served();
  const auto data = entry_data_files(cache());
  ASSERT_EQ(data.size(), 1u);
  {
    std::fstream file(data[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(file_size_ / 2));
    const char byte = static_cast<char>(file.get());
    file.seekp(static_cast<std::streamoff>(file_size_ / 2));
    file.put(static_cast<char>(byte ^ 0x20));
  }
  const auto again = stream();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(sorted_tensor_lines(again.out), oracle());
  EXPECT_NE(again.err.find("do not match their hash; fetching them again"), std::string::npos)
      << again.err;
  const std::uint64_t refetched = served() - cold_served;
  EXPECT_GT(refetched, 0u);
  EXPECT_LE(refetched, 64u * 1024) << "only the damaged range is fetched again";
  // And recorded again: a third load fetches nothing.
  const std::uint64_t before_third = served();
  ASSERT_EQ(stream().exit_code, 0);
  EXPECT_EQ(served(), before_third);
}

TEST_F(CacheCli, OfflineWorksFromAFullEntryWithTheSourceDown) {
  start_nginx();
  const auto expected = oracle();
  ASSERT_EQ(stream().exit_code, 0);
  nginx_.reset();
  const auto offline = stream({"--cache-mode", "offline"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_EQ(sorted_tensor_lines(offline.out), expected);
  EXPECT_EQ(summary_value(offline.out, "source_bytes"), 0);
  EXPECT_EQ(summary_value(offline.out, "requests"), 0);
}

TEST_F(CacheCli, OfflineFailsClearlyOnAPartialEntry) {
  start_nginx();
  ASSERT_EQ(stream({"--include", "*layers.0.*"}).exit_code, 0);
  nginx_.reset();
  const auto offline = stream({"--cache-mode", "offline"});
  EXPECT_EQ(offline.exit_code, 1);
  EXPECT_NE(offline.err.find("tensorstream: error: " + url_ + ": bytes "), std::string::npos)
      << offline.err;
  EXPECT_NE(offline.err.find("are not in the cache"), std::string::npos) << offline.err;
  EXPECT_NE(offline.err.find("--cache-mode offline asks the source nothing"), std::string::npos);
}

TEST_F(CacheCli, OfflineWithoutAnEntryNamesTheCache) {
  start_nginx();
  nginx_.reset();
  const auto offline = stream({"--cache-mode", "offline"});
  EXPECT_EQ(offline.exit_code, 1);
  EXPECT_EQ(offline.err, "tensorstream: error: " + url_ + ": not in the cache " +
                             cache().string() + " (--cache-mode offline asks the source nothing)\n");
}

TEST_F(CacheCli, ReadModeUsesTheCacheButAddsNothing) {
  start_nginx();
  const auto read_only = stream({"--cache-mode", "read"});
  ASSERT_EQ(read_only.exit_code, 0) << read_only.err;
  EXPECT_TRUE(entry_data_files(cache()).empty());
  ASSERT_EQ(stream().exit_code, 0);
  const std::uint64_t filled = served();
  const auto again = stream({"--cache-mode", "read"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(served(), filled);
}

TEST_F(CacheCli, TwoLoadsAtOnceAreExactAndServedAtMostTwice) {
  start_nginx("location /m/ { limit_rate 4m; }");
  const auto expected = oracle();
  const std::vector<std::string> argv = stream_argv();
  ChildProcess first(argv, logs_.path() / "first.log");
  ChildProcess second(argv, logs_.path() / "second.log");
  for (ChildProcess* process : {&first, &second}) {
    const int status = process->wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(sorted_tensor_lines(testing::read_text_file(logs_.path() / "first.log")), expected);
  EXPECT_EQ(sorted_tensor_lines(testing::read_text_file(logs_.path() / "second.log")), expected);
  EXPECT_LE(served(), 2 * file_size_ + 2 * 64 * 1024);
  const std::uint64_t both = served();
  ASSERT_EQ(stream().exit_code, 0);
  EXPECT_EQ(served(), both);
}

TEST_F(CacheCli, LoadsKilledMidFillNeverLeaveAWrongByte) {
  start_nginx("location /m/ { limit_rate 8m; }");
  const auto expected = oracle();
  const std::vector<std::string> argv = stream_argv();
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    ChildProcess load(argv, logs_.path() / "killed.log");
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 400)(random)));
    ::kill(load.pid(), SIGKILL);
    load.wait();
  }
  const auto after = stream();
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(sorted_tensor_lines(after.out), expected);
  const auto warm = stream({"--cache-mode", "offline"});
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(sorted_tensor_lines(warm.out), expected);
}

TEST_F(CacheCli, ACacheTooSmallEvictsLeastRecentlyUsedEntriesNoLoadUses) {
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx();
  const std::string first_url = url_;
  const std::string size = std::to_string(file_size_ + file_size_ / 2);
  ASSERT_EQ(stream({"--cache-size", size}).exit_code, 0);
  url_ = nginx_->base_url() + "/other/model.safetensors";
  const auto second = stream({"--cache-size", size});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_EQ(entry_data_files(cache()).size(), 1u) << "the first model's entry was evicted";
  const std::uint64_t before = served();
  ASSERT_EQ(stream({"--cache-size", size}).exit_code, 0);
  EXPECT_EQ(served(), before) << "the second model stayed cached";
  url_ = first_url;
  ASSERT_EQ(stream({"--cache-size", size}).exit_code, 0);
  EXPECT_GT(served(), before) << "the first model was fetched again";
}

TEST_F(CacheCli, AnEntryInUseIsNeverEvicted) {
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx("location /m/ { limit_rate 1m; }");
  const std::string size = std::to_string(file_size_ + file_size_ / 2);
  std::vector<std::string> argv = {TENSORSTREAM_CLI_PATH, "stream", url_, "--json", "--checksum",
                                   "sha256", "--cache", cache().string(), "--cache-size", size};
  ChildProcess slow(argv, logs_.path() / "slow.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (entry_data_files(cache()).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto in_use = entry_data_files(cache());
  ASSERT_EQ(in_use.size(), 1u);
  url_ = nginx_->base_url() + "/other/model.safetensors";
  const auto other = stream({"--cache-size", size});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_TRUE(fs::exists(in_use[0])) << "the entry in use was evicted";
  const int status = slow.wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(sorted_tensor_lines(testing::read_text_file(logs_.path() / "slow.log")), oracle());
}

TEST_F(CacheCli, AMalformedCacheModeIsAUsageError) {
  const auto result = run_cli({"stream", model_file().string(), "--cache", cache().string(),
                               "--cache-mode", "sometimes"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--cache-mode"), std::string::npos) << result.err;
}

TEST_F(CacheCli, PartitionReadsThroughTheCacheAndOfflineWritesTheSame) {
  // The source is the model's directory, moved away after the first run: the second partition
  // reads the listing, config.json and every tensor from the cache alone.
  const auto first = run_cli({"partition", (models_.path() / "m").string() + "/",
                              (cache_.path() / "first").string(), "--tp", "1,2", "--cache",
                              cache().string()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  fs::rename(models_.path() / "m", models_.path() / "gone");
  const auto offline = run_cli({"partition", (models_.path() / "m").string() + "/",
                                (cache_.path() / "offline").string(), "--tp", "1,2", "--cache",
                                cache().string(), "--cache-mode", "offline"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  const auto files = testing::files_under(cache_.path() / "first");
  ASSERT_FALSE(files.empty());
  ASSERT_EQ(files, testing::files_under(cache_.path() / "offline"));
  for (const auto& name : files) {
    EXPECT_EQ(testing::read_file(cache_.path() / "offline" / name),
              testing::read_file(cache_.path() / "first" / name))
        << name;
  }
}

TEST_F(CacheCli, ServeLoadsThroughTheCacheAndAgainWithoutADataRequest) {
  start_nginx();
  const auto expected = served_tensors(model_file().string());
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(served_tensors(url_, {"--cache", cache().string()}), expected);
  const std::uint64_t cold_served = served();
  EXPECT_GE(cold_served, file_size_ - 1024);
  EXPECT_EQ(served_tensors(url_, {"--cache", cache().string()}), expected);
  EXPECT_EQ(served(), cold_served) << "the second serve fetched data";
}

TEST_F(CacheCli, LsAndDuSayWhatTheCacheHolds) {
  start_nginx();
  ASSERT_EQ(stream({"--include", "*layers.0.*"}).exit_code, 0);
  const auto ls = run_cli({"cache", "ls", "--cache", cache().string(), "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const auto lines = testing::lines_of(ls.out);
  ASSERT_EQ(lines.size(), 1u) << ls.out;
  EXPECT_EQ(lines[0].rfind("{\"url\":\"" + url_ + "\",\"version\":\"ETag ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",\"size\":" + std::to_string(file_size_) + ","), std::string::npos);
  const long long cached = std::stoll(lines[0].substr(lines[0].find("\"cached_bytes\":") + 15));
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, static_cast<long long>(file_size_ / 2));
  EXPECT_NE(lines[0].find("\"in_use\":false}"), std::string::npos);
  const auto du = run_cli({"cache", "du", "--cache", cache().string(), "--json"});
  ASSERT_EQ(du.exit_code, 0) << du.err;
  EXPECT_NE(du.out.find("{\"entries\":1,"), std::string::npos) << du.out;
  EXPECT_NE(du.out.find("\"cached_bytes\":" + std::to_string(cached) + ","), std::string::npos);
}

TEST_F(CacheCli, VerifyDropsADamagedRangeAndExitsOne) {
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const auto clean = run_cli({"cache", "verify", "--cache", cache().string()});
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.out.rfind("checked ", 0), 0u) << clean.out;
  const auto data = entry_data_files(cache());
  ASSERT_EQ(data.size(), 1u);
  {
    std::fstream file(data[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(file_size_ / 3));
    file.put('\x5a');
    file.put('\xa5');
  }
  const auto damaged = run_cli({"cache", "verify", "--cache", cache().string()});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_NE(damaged.out.find(url_ + ": 1 damaged range ("), std::string::npos) << damaged.out;
  EXPECT_EQ(damaged.err, "tensorstream: error: 1 damaged range found and dropped\n");
  const auto again = run_cli({"cache", "verify", "--cache", cache().string()});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  const std::uint64_t before = served();
  const auto load = stream();
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(sorted_tensor_lines(load.out), oracle());
  EXPECT_GT(served(), before);
  EXPECT_LE(served() - before, 64u * 1024);
}

TEST_F(CacheCli, PruneAndRmRemoveEntriesNoLoadUses) {
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const std::string first = url_;
  url_ = nginx_->base_url() + "/other/model.safetensors";
  ASSERT_EQ(stream().exit_code, 0);
  const auto recent = run_cli({"cache", "prune", "--cache", cache().string(), "--older-than", "1h"});
  ASSERT_EQ(recent.exit_code, 0) << recent.err;
  EXPECT_EQ(recent.out, "");
  EXPECT_EQ(entry_data_files(cache()).size(), 2u);
  const auto rm = run_cli({"cache", "rm", first, "--cache", cache().string()});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out.rfind("removed " + first + "  ", 0), 0u) << rm.out;
  EXPECT_EQ(entry_data_files(cache()).size(), 1u);
  const auto missing = run_cli({"cache", "rm", first, "--cache", cache().string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "tensorstream: error: " + first + ": not in the cache\n");
  const auto all = run_cli({"cache", "prune", "--cache", cache().string()});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out.rfind("removed " + url_ + "  ", 0), 0u) << all.out;
  EXPECT_TRUE(entry_data_files(cache()).empty());
}

// A mistyped --cache would otherwise list as an empty cache, and `rm` of it find nothing.
TEST_F(CacheCli, TheCacheCommandsRefuseADirectoryThatIsNoCache) {
  const auto missing = run_cli({"cache", "ls", "--cache", cache().string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "tensorstream: error: " + cache().string() + ": no such directory\n");
  const std::string models = (models_.path() / "m").string();
  const auto other = run_cli({"cache", "du", "--cache", models});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err,
            "tensorstream: error: " + models + ": not a cache directory (no objects/ in it)\n");
  fs::create_directories(cache());
  const auto empty = run_cli({"cache", "du", "--cache", cache().string(), "--cache-min-free", "1GiB"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  const auto lines = testing::lines_of(empty.out);
  ASSERT_EQ(lines.size(), 2u) << empty.out;
  EXPECT_EQ(lines[0], "0 B in 0 entries under " + cache().string() + " (0 B of 0 B cached)");
  EXPECT_TRUE(std::regex_match(
      lines[1], std::regex("[0-9.]+ [KMGT]?i?B free of [0-9.]+ [KMGT]?i?B; the cache keeps 1.0 "
                           "GiB free")))
      << lines[1];
}

// An entry is named as streams name the object: a local file by its absolute path, whether
// the stream and `rm` were given a file:// URL, a relative path or the path itself.
TEST_F(CacheCli, RmFindsALocalFileByAnyNameAStreamTakes) {
  const std::string path = model_file().string();
  const std::vector<std::string> names = {"file://" + path, "m/model.safetensors", path};
  for (const std::string& name : names) {
    const fs::path here = fs::current_path();
    fs::current_path(models_.path());
    const auto streamed = run_cli({"stream", path, "--cache", cache().string()});
    const auto removed = run_cli({"cache", "rm", name, "--cache", cache().string()});
    fs::current_path(here);
    ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
    EXPECT_EQ(removed.exit_code, 0) << name << ": " << removed.err;
    EXPECT_EQ(removed.out.rfind("removed " + path + "  ", 0), 0u) << name << ": " << removed.out;
    EXPECT_TRUE(entry_data_files(cache()).empty()) << name;
  }
}

// The model's own directory as the cache would get objects/ among its files, which the next copy
// of the model would take for model files.
TEST_F(CacheCli, AStreamRefusesADirectoryOfOtherFilesAsItsCache) {
  const fs::path model_directory = models_.path() / "m";
  const auto before = std::distance(fs::directory_iterator(model_directory), {});
  const auto result = run_cli({"stream", model_file().string(), "--cache", model_directory.string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: " + model_directory.string() +
                            ": not a cache directory (it holds files but no objects/); give a new "
                            "or empty directory for the cache\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(model_directory), {}), before);
  // The root of a new volume holds lost+found and nothing else: a fine cache.
  fs::create_directories(cache() / "lost+found");
  const auto volume = run_cli({"stream", model_file().string(), "--cache", cache().string()});
  EXPECT_EQ(volume.exit_code, 0) << volume.err;
  EXPECT_EQ(entry_data_files(cache()).size(), 1u);
}

// `offline` promises to ask the source nothing; without a cache it would read all of it.
TEST_F(CacheCli, ACacheFlagWithoutACacheIsAUsageError) {
  testing::ScopedEnvironment environment({"TENSORSTREAM_CACHE_DIR", "FLYTE_MODEL_LOADER_CACHE_DIR"});
  const std::string path = model_file().string();
  const auto offline = run_cli({"stream", path, "--cache-mode", "offline"});
  EXPECT_EQ(offline.exit_code, 2);
  EXPECT_EQ(offline.err, "tensorstream: error: --cache-mode offline needs a cache: --cache DIR, "
                         "or TENSORSTREAM_CACHE_DIR\n");
  const auto size = run_cli({"stream", path, "--cache-size", "1GiB"});
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_EQ(size.err, "tensorstream: error: --cache-size needs a cache: --cache DIR, or "
                      "TENSORSTREAM_CACHE_DIR\n");
  EXPECT_EQ(run_cli({"stream", path, "--cache-mode", "off"}).exit_code, 0);
  environment.set("TENSORSTREAM_CACHE_DIR", cache().string());
  const auto from_environment = run_cli({"stream", path, "--cache-mode", "read"});
  EXPECT_EQ(from_environment.exit_code, 0) << from_environment.err;
}

TEST_F(CacheCli, TheCacheCommandNeedsADirectory) {
  const auto result = run_cli({"cache", "ls"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: name the cache: --cache DIR, or TENSORSTREAM_CACHE_DIR\n");
  const std::string directory = cache_.path().string();
  const auto given_as_a_word = run_cli({"cache", "ls", directory});
  EXPECT_EQ(given_as_a_word.exit_code, 2);
  EXPECT_EQ(given_as_a_word.err, "tensorstream: error: The following argument was not expected: " +
                                     directory + " (did you mean --cache " + directory + "?)\n");
}

// A small disk under the cache, as a node's cache volume that a model outgrows.
std::optional<SmallDisk> small_disk(std::uint64_t bytes) {
  std::string why;
  auto disk = SmallDisk::create(bytes, why);
  if (!disk) ADD_FAILURE() << why;
  return disk;
}

// A model larger than the disk: every stream exits 0 with exact bytes, says once why it does not
// cache, and leaves the default floor (10 % of the disk) free, from every source and mode.
TEST_F(CacheCli, AModelLargerThanTheCacheDiskNeverFailsAStreamAndTheDiskKeepsItsFloor) {
  auto disk = small_disk(2 << 20);
  if (!disk) return;
  start_nginx();
  const auto expected = oracle();
  const std::string cache = (disk->path() / "cache").string();
  for (const char* mode : {"readwrite", "readwrite", "read", "readwrite"}) {
    for (const std::string& source : {url_, model_file().string()}) {
      const auto result = run_cli({"stream", source, "--json", "--checksum", "sha256",
                                   "--chunk-size", "64KiB", "--cache", cache, "--cache-mode",
                                   mode});
      ASSERT_EQ(result.exit_code, 0) << source << ": " << result.err;
      EXPECT_EQ(sorted_tensor_lines(result.out), expected) << source;
      EXPECT_GE(disk->available(), disk->total() / 10) << source << " " << mode;
    }
  }
  const auto warned = run_cli({"stream", url_, "--cache", cache});
  EXPECT_NE(warned.err.find("tensorstream: warning: cache " + cache + ": " + url_ + " (" +
                            format_byte_size(file_size_) + ") is not cached: the disk keeps " +
                            format_byte_size(disk->total() / 10) +
                            " free (--cache-min-free)\n"),
            std::string::npos)
      << warned.err;
}

// A model that fits is served from the cache the second time; the next one that fits only
// without the first takes its place, the least recently used entry no stream uses.
TEST_F(CacheCli, ModelsThatFitASmallDiskAreServedFromItInTurn) {
  auto disk = small_disk(6 << 20);
  if (!disk) return;
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx();
  const std::string first = url_;
  const std::string second = nginx_->base_url() + "/other/model.safetensors";
  for (const std::string& url : {first, first, second}) {
    const auto result = run_cli({"stream", url, "--json", "--chunk-size", "64KiB", "--cache",
                                 (disk->path() / "cache").string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_GE(disk->available(), disk->total() / 10);
  }
  const std::uint64_t before = served();
  const auto again = run_cli({"stream", second, "--json", "--checksum", "sha256", "--cache",
                              (disk->path() / "cache").string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(served(), before) << "the second model was fetched again";
  EXPECT_EQ(summary_value(again.out, "source_bytes"), 0);
  EXPECT_EQ(entry_data_files(disk->path() / "cache").size(), 1u) << "the first was evicted";
}

// A disk filled by something else: the write that meets ENOSPC says so, and the stream goes on.
TEST_F(CacheCli, AFullDiskIsAWarningThatSaysSoAndTheStreamGoesOn) {
  auto disk = small_disk(1 << 20);
  if (!disk) return;
  {
    std::ofstream filler(disk->path() / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
  }
  const std::string cache = (disk->path() / "cache").string();
  const auto result = run_cli({"stream", (models_.path() / "m").string() + "/", "--json",
                               "--checksum", "sha256", "--cache", cache});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(sorted_tensor_lines(result.out), oracle());
  EXPECT_NE(result.err.find("No space left on device; the cache is used read-only from here on"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("Input/output error"), std::string::npos) << result.err;
}

// A cache on a volume mounted read-only (or a directory the process may not write): read as it
// is, never the reason a stream fails.
TEST_F(CacheCli, AReadOnlyCacheIsReadAndNeverFailsAStream) {
  auto disk = small_disk(16 << 20);
  if (!disk) return;
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx();
  const auto expected = oracle();
  const std::string cache = (disk->path() / "cache").string();
  ASSERT_EQ(run_cli({"stream", url_, "--cache", cache}).exit_code, 0);
  disk->set_read_only(true);
  const auto cached = run_cli({"stream", url_, "--json", "--checksum", "sha256", "--cache", cache});
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  EXPECT_EQ(sorted_tensor_lines(cached.out), expected);
  EXPECT_EQ(summary_value(cached.out, "source_bytes"), 0);
  EXPECT_NE(cached.err.find("Read-only file system; the cache is used read-only from here on"),
            std::string::npos)
      << cached.err;
  const auto other = run_cli({"stream", nginx_->base_url() + "/other/model.safetensors", "--json",
                              "--cache", cache});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  const auto offline_folder =
      run_cli({"stream", (models_.path() / "m").string() + "/", "--cache", cache});
  EXPECT_EQ(offline_folder.exit_code, 0) << offline_folder.err;
  disk->set_read_only(false);
}

// A data file cut short (by hand, or a disk error): the bytes come from the source.
TEST_F(CacheCli, AnEntryThatCannotBeReadIsPassedBy) {
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const auto data = entry_data_files(cache());
  ASSERT_EQ(data.size(), 1u);
  fs::resize_file(data[0], file_size_ / 2);
  const auto again = stream();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(sorted_tensor_lines(again.out), oracle());
  EXPECT_NE(again.err.find("tensorstream: warning: cache " + cache().string() + ": " +
                           data[0].string() +
                           ": the cache's data file is shorter than its entry says; reading "
                           "from the source instead\n"),
            std::string::npos)
      << again.err;
}

// nginx's ETag is the modification time in seconds and the size: a file rewritten within the
// same second keeps it. An entry filled then is not trusted: the next stream fetches it again.
TEST_F(CacheCli, AnObjectRewrittenInTheSecondItWasCachedIsFetchedAgain) {
  // In the future, so that every response here finds it modified "within a second".
  const auto modified = fs::file_time_type::clock::now() + std::chrono::seconds(30);
  fs::last_write_time(model_file(), modified);
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  const std::uint64_t first = served();
  testing::invert_tensor_data(model_file());
  fs::last_write_time(model_file(), modified);
  const auto expected = oracle();
  const auto again = stream();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(sorted_tensor_lines(again.out), expected);
  EXPECT_GE(served() - first, file_size_ - 1024) << "the entry's old bytes were served";
  EXPECT_EQ(summary_value(again.out, "cache_bytes"), 0);
}

// Each object fits the bound, the three together do not: the bound holds for the cache.
TEST_F(CacheCli, TheCacheSizeHoldsForTheWholeCache) {
  generate_synthetic_model((models_.path() / "shards").string(), {.preset = "tiny", .shards = 3});
  const std::uint64_t bound = 3 << 20;
  const auto result =
      run_cli({"stream", (models_.path() / "shards").string() + "/", "--json", "--checksum",
               "sha256", "--cache", cache().string(), "--cache-size", "3MiB", "-v"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("does not fit in --cache-size 3.0 MiB beside the entries in use"),
            std::string::npos)
      << result.err;
  const auto du = run_cli({"cache", "du", "--cache", cache().string(), "--json"});
  ASSERT_EQ(du.exit_code, 0) << du.err;
  const auto at = du.out.find("\"disk_bytes\":");
  ASSERT_NE(at, std::string::npos) << du.out;
  EXPECT_LE(std::stoull(du.out.substr(at + 13)), bound) << du.out;
}

// A model folder over plain HTTP is found through its index, never listed: offline too.
TEST_F(CacheCli, OfflineStreamsAnHttpModelFolderThroughItsIndex) {
  generate_synthetic_model((models_.path() / "folder").string(),
                           {.preset = "tiny", .shards = 2, .index = true});
  testing::age_files(models_.path() / "folder");
  start_nginx();
  url_ = nginx_->base_url() + "/folder/";
  const auto online = stream();
  ASSERT_EQ(online.exit_code, 0) << online.err;
  nginx_.reset();
  const auto offline = stream({"--cache-mode", "offline"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_EQ(sorted_tensor_lines(offline.out), sorted_tensor_lines(online.out));
  EXPECT_EQ(summary_value(offline.out, "source_bytes"), 0);
}

// Monitoring the cache (du, ls, verify) is no use of its entries: eviction and prune go by
// streams alone.
TEST_F(CacheCli, DuBetweenTwoLoadsLeavesPruneOlderThanItsOldEntry) {
  generate_synthetic_model((models_.path() / "other").string(), {.preset = "tiny"});
  testing::age_files(models_.path() / "other");
  start_nginx();
  ASSERT_EQ(stream().exit_code, 0);
  for (const auto& data : entry_data_files(cache())) {
    fs::last_write_time(data.parent_path() / "info",
                        fs::file_time_type::clock::now() - std::chrono::hours(2));
  }
  for (const std::string command : {"du", "ls", "verify"}) {
    EXPECT_EQ(run_cli({"cache", command, "--cache", cache().string()}).exit_code, 0) << command;
  }
  const std::string old_url = url_;
  url_ = nginx_->base_url() + "/other/model.safetensors";
  ASSERT_EQ(stream().exit_code, 0);
  const auto pruned = run_cli({"cache", "prune", "--cache", cache().string(), "--older-than", "1h"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_EQ(pruned.out.rfind("removed " + old_url + "  ", 0), 0u) << pruned.out;
  EXPECT_EQ(entry_data_files(cache()).size(), 1u);
}

// A process killed while it made or removed an entry leaves it in tmp/: counted, then swept.
TEST_F(CacheCli, WhatAKilledProcessLeftInTmpIsCountedAndSwept) {
  ASSERT_EQ(run_cli({"stream", model_file().string(), "--cache", cache().string()}).exit_code, 0);
  pid_t gone = 0;
  for (pid_t pid = 4000000; gone == 0; --pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) gone = pid;
  }
  const fs::path abandoned = cache() / "tmp" / ("removed-" + std::to_string(gone) + "-1");
  testing::write_file(abandoned / "data", std::string(1 << 20, 'x'));
  const fs::path at_work = cache() / "tmp" / (std::to_string(::getpid()) + "-2");
  testing::write_file(at_work / "data", std::string(4096, 'x'));
  for (const fs::path& draft : {abandoned, at_work}) {
    fs::last_write_time(draft, fs::file_time_type::clock::now() - std::chrono::minutes(2));
  }
  const auto du = run_cli({"cache", "du", "--cache", cache().string(), "--json"});
  ASSERT_EQ(du.exit_code, 0) << du.err;
  const auto at = du.out.find("\"pending_bytes\":");
  ASSERT_NE(at, std::string::npos) << du.out;
  EXPECT_GE(std::stoull(du.out.substr(at + 16)), 1u << 20) << du.out;
  ASSERT_EQ(run_cli({"cache", "prune", "--cache", cache().string(), "--older-than", "1h"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(at_work)) << "a running process's draft was removed";
}

TEST_F(CacheCli, AMalformedFloorIsAUsageError) {
  const std::string path = model_file().string();
  const auto share = run_cli({"stream", path, "--cache", cache().string(), "--cache-min-free", "120%"});
  EXPECT_EQ(share.exit_code, 2);
  EXPECT_EQ(share.err, "tensorstream: error: --cache-min-free 120%: not a size (5GiB) or a share "
                       "of the file system (10%)\n");
  testing::ScopedEnvironment environment({"TENSORSTREAM_CACHE_DIR", "FLYTE_MODEL_LOADER_CACHE_DIR"});
  const auto without = run_cli({"stream", path, "--cache-min-free", "1GiB"});
  EXPECT_EQ(without.exit_code, 2);
  EXPECT_EQ(without.err, "tensorstream: error: --cache-min-free needs a cache: --cache DIR, or "
                         "TENSORSTREAM_CACHE_DIR\n");
}

// The same over S3: s3rver's ETag is the version, and a proxy counts the object reads it serves.
class CacheS3Cli : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    generate_synthetic_model((models_.path() / "m").string(), {.preset = "tiny"});
    put_model();
    proxy_ = std::make_unique<FaultProxy>(s3rver_->port(), FaultProxy::Faults{});
    set("AWS_ENDPOINT_URL", proxy_->endpoint());
  }

  fs::path model_file() const { return models_.path() / "m" / "model.safetensors"; }
  void put_model() const { s3rver_->put("models", "m/model.safetensors", model_file()); }

  testing::ProcessResult stream() const {
    return run_cli({"stream", "s3://models/m/model.safetensors", "--json", "--checksum", "sha256",
                    "--chunk-size", "64KiB", "--cache", cache_.path().string()});
  }

  std::vector<std::string> oracle() const {
    const auto local = run_cli({"stream", model_file().string(), "--json", "--checksum", "sha256"});
    EXPECT_EQ(local.exit_code, 0) << local.err;
    return sorted_tensor_lines(local.out);
  }

  TempDir models_;
  TempDir cache_;
  std::unique_ptr<FaultProxy> proxy_;
};

TEST_F(CacheS3Cli, AColdLoadFillsTheNextReadsNothingAndARewrittenObjectIsFetchedAgain) {
  const auto expected = oracle();
  const auto cold = stream();
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_EQ(sorted_tensor_lines(cold.out), expected);
  const int cold_reads = proxy_->reads();
  EXPECT_GT(cold_reads, 1);

  const auto warm = stream();
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(sorted_tensor_lines(warm.out), expected);
  EXPECT_EQ(proxy_->reads(), cold_reads) << "the warm load read objects";
  EXPECT_EQ(summary_value(warm.out, "source_bytes"), 0);

  // Same size and key, other bytes: a new ETag, so a new entry, fetched whole.
  testing::invert_tensor_data(model_file());
  put_model();
  const auto rewritten_expected = oracle();
  ASSERT_NE(rewritten_expected, expected);
  const auto rewritten = stream();
  ASSERT_EQ(rewritten.exit_code, 0) << rewritten.err;
  EXPECT_EQ(sorted_tensor_lines(rewritten.out), rewritten_expected);
  EXPECT_GE(proxy_->reads() - cold_reads, cold_reads - 1);
  EXPECT_LE(summary_value(rewritten.out, "cache_bytes"), 64 * 1024);
  EXPECT_EQ(entry_data_files(cache_.path()).size(), 2u) << "one entry per version";
}

}  // namespace
}  // namespace tensorstream
