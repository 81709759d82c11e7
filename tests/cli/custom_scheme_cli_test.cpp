// A scheme registered by the program that embeds the commands, from this file alone, serves the
// tool's commands as the built-in ones do: the stream, the listing, the errors, and the common
// flags it declares (--endpoint-url), which reach its own options.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cli/run.hpp"
#include "support/files.hpp"
#include "support/memory_store.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/scheme.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::lines_of;
using testing::MemoryObjects;
using testing::MemoryStore;
using testing::TempDir;

// What cli::run printed and returned.
struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the tool's commands in this process, with stdout and stderr sent to files meanwhile.
Outcome run_in_process(std::vector<std::string> arguments) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  const fs::path err = dir.path() / "err";
  std::vector<char*> argv;
  arguments.insert(arguments.begin(), "tensorstream");
  for (auto& argument : arguments) argv.push_back(argument.data());
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(STDOUT_FILENO);
  const int saved_err = ::dup(STDERR_FILENO);
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  Outcome outcome;
  outcome.exit_code = cli::run(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, STDOUT_FILENO);
  ::dup2(saved_err, STDERR_FILENO);
  for (const int fd : {saved_out, saved_err, out_fd, err_fd}) ::close(fd);
  outcome.out = testing::read_file(out);
  outcome.err = testing::read_file(err);
  return outcome;
}

// mem://'s own options: the endpoint whose memory serves the buckets, as --endpoint-url names an
// S3-compatible server.
struct MemOptions {
  std::string endpoint;
};

class CustomSchemeCli : public ::testing::Test {
 protected:
  // The synthetic checkpoint on disk, and the same files under mem://models/tiny/; at any
  // endpoint, a replica holding one note under that prefix instead.
  static void SetUpTestSuite() {
    model_ = new TempDir;
    generate_synthetic_model(model_->path() / "tiny", {.preset = "tiny"});
    auto objects = std::make_shared<MemoryObjects>();
    for (const auto& entry : fs::directory_iterator(model_->path() / "tiny")) {
      (*objects)["/tiny/" + entry.path().filename().string()] = testing::read_file(entry.path());
    }
    auto replica = std::make_shared<MemoryObjects>();
    (*replica)["/tiny/NOTE"] = "at the replica\n";
    static std::once_flag registered;
    std::call_once(registered, [&] {
      register_scheme(
          {.name = "mem",
           .form = UrlForm::bucket,
           .open = [objects, replica](const Url& url, boost::asio::any_io_executor,
                                      const StoreOptions& options) -> std::unique_ptr<ObjectStore> {
             if (const MemOptions* mine = options.find<MemOptions>()) {
               return std::make_unique<MemoryStore>(url.host, replica, mine->endpoint);
             }
             return std::make_unique<MemoryStore>(url.host, objects);
           },
           .takes = {CommonSetting::endpoint},
           .apply =
               [](const CommonStoreSettings& settings, StoreOptions& options) {
                 handed_.push_back(settings);
                 options.get<MemOptions>().endpoint = settings.endpoint;
               }});
    });
  }

  void SetUp() override { handed_.clear(); }

  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static inline TempDir* model_ = nullptr;
  // What the registry handed mem://'s `apply`, in order.
  static inline std::vector<CommonStoreSettings> handed_;
};

TEST_F(CustomSchemeCli, StreamsEveryTensorByteExact) {
  const Outcome memory = run_in_process({"stream", "mem://models/tiny", "--checksum", "sha256"});
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  const Outcome disk =
      run_in_process({"stream", (model_->path() / "tiny").string(), "--checksum", "sha256"});
  ASSERT_EQ(disk.exit_code, 0) << disk.err;

  std::vector<std::string> from_memory = lines_of(memory.out);
  std::vector<std::string> from_disk = lines_of(disk.out);
  ASSERT_EQ(from_memory.size(), llama_tensors(synthetic_preset("tiny")).size() + 1);
  EXPECT_TRUE(from_memory.back().starts_with(
      "streamed " + std::to_string(from_memory.size() - 1) +
      " tensors (3.8 MiB) from mem://models/tiny in "))
      << from_memory.back();
  EXPECT_NE(from_memory.back().find("[memory, "), std::string::npos) << from_memory.back();
  from_memory.pop_back();
  from_disk.pop_back();
  EXPECT_EQ(from_memory, from_disk) << "every tensor's sha256, in the same order";
}

TEST_F(CustomSchemeCli, ListsItsObjects) {
  const Outcome listing = run_in_process({"ls", "mem://models/tiny/"});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  std::set<fs::path> files;
  for (const auto& entry : fs::directory_iterator(model_->path() / "tiny")) {
    files.insert(entry.path());
  }
  std::string expected;
  for (const fs::path& file : files) {
    char size[32];
    std::snprintf(size, sizeof size, "%12llu",
                  static_cast<unsigned long long>(fs::file_size(file)));
    expected += std::string(size) + "  mem://models/tiny/" + file.filename().string() + "\n";
  }
  expected += std::to_string(files.size()) + " objects, 3.8 MiB\n";
  EXPECT_EQ(listing.out, expected);
}

TEST_F(CustomSchemeCli, TheEndpointFlagReachesItsOwnOptions) {
  const Outcome listing =
      run_in_process({"ls", "--json", "--endpoint-url", "http://replica.test:9000",
                      "mem://models/tiny/"});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  EXPECT_EQ(listing.out, "{\"url\":\"mem://models/tiny/NOTE\",\"size\":15}\n");
  ASSERT_FALSE(handed_.empty());
  for (const CommonStoreSettings& settings : handed_) {
    EXPECT_EQ(settings.endpoint, "http://replica.test:9000");
  }
}

TEST_F(CustomSchemeCli, IsGivenOnlyTheSettingsItDeclares) {
  const Outcome listing = run_in_process(
      {"ls", "--json", "--endpoint-url", "http://replica.test:9000", "--region", "eu-west-1",
       "--account", "devstoreaccount1", "--no-sign-request", "mem://models/tiny/NOTE"});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  EXPECT_EQ(listing.out, "{\"url\":\"mem://models/tiny/NOTE\",\"size\":15}\n");
  ASSERT_FALSE(handed_.empty());
  for (const CommonStoreSettings& settings : handed_) {
    EXPECT_EQ(settings.endpoint, "http://replica.test:9000");
    EXPECT_EQ(settings.region, "");
    EXPECT_EQ(settings.account, "");
    EXPECT_FALSE(settings.anonymous);
    EXPECT_EQ(settings.profile, "");
  }
}

TEST_F(CustomSchemeCli, FlagsItDoesNotDeclareLeaveItsOptionsAlone) {
  const Outcome listing = run_in_process({"ls", "--json", "--region", "eu-west-1", "--account",
                                          "devstoreaccount1", "--no-sign-request",
                                          "mem://models/tiny/config.json"});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  EXPECT_EQ(listing.out,
            "{\"url\":\"mem://models/tiny/config.json\",\"size\":" +
                std::to_string(fs::file_size(model_->path() / "tiny" / "config.json")) + "}\n");
  EXPECT_TRUE(handed_.empty()) << "mem:// declares none of --region, --account, --no-sign-request";
}

TEST_F(CustomSchemeCli, TheHelpNamesItAmongTheSchemesAFlagReaches) {
  const Outcome help = run_in_process({"ls", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("taken by s3://, az:// and mem://"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("taken by s3://, gs://, az:// and hf://"), std::string::npos)
      << help.out;
}

TEST_F(CustomSchemeCli, AMissingObjectIsARuntimeErrorNamingIt) {
  const Outcome missing = run_in_process({"stream", "mem://models/tiny/absent.safetensors"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "tensorstream: error: mem://models/tiny/absent.safetensors: no such object in "
            "memory\n");
}

TEST_F(CustomSchemeCli, AnUnregisteredSchemeIsAUsageErrorNamingTheRegisteredOnes) {
  const Outcome unknown = run_in_process({"stream", "vault://models/tiny/"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err,
            "tensorstream: error: invalid URL 'vault://models/tiny/': unsupported scheme 'vault' "
            "(use file, http, https, s3, gs, az, hf or mem)\n");
}

}  // namespace
}  // namespace tensorstream
