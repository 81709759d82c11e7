// `--direct-io` and TENSORSTREAM_DIRECT_IO: the same tensors past the page cache, the bytes read
// so in the summaries, and one-line usage errors for anything but auto, on and off.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <regex>
#include <string>

#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

class DirectIoCli : public ::testing::Test {
 protected:
  void SetUp() override {
    environment_.unset("TENSORSTREAM_DIRECT_IO");
    environment_.unset("FLYTE_MODEL_LOADER_DIRECT_IO");
    ASSERT_EQ(testing::run_cli({"gen-model", model_.path().string(), "--preset", "tiny"}).exit_code,
              0);
  }

  bool direct_io_refused() {
    boost::asio::io_context context;
    FileOptions options;
    options.direct_io = DirectIo::on;
    FileStore store(context.get_executor(), options);
    return store.memory_alignment((model_.path() / "model.safetensors").string()) == 0;
  }

  testing::ScopedEnvironment environment_;
  testing::TempDir model_;
};

TEST_F(DirectIoCli, OnStreamsTheSameTensorsAndTheSummariesSayHowManyBytesWentPastTheCache) {
  if (direct_io_refused()) {
    GTEST_SKIP() << "the file system of " << model_.path() << " refuses O_DIRECT";
  }
  const auto direct = testing::run_cli({"stream", model_.path().string(), "--json", "--checksum",
                                        "sha256", "--direct-io", "on"});
  const auto buffered = testing::run_cli({"stream", model_.path().string(), "--json",
                                          "--checksum", "sha256", "--direct-io", "off"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  ASSERT_EQ(buffered.exit_code, 0) << buffered.err;
  EXPECT_EQ(testing::sorted_tensor_lines(direct.out), testing::sorted_tensor_lines(buffered.out));

  std::smatch match;
  const std::regex direct_bytes(R"re("bytes":([0-9]+),.*"direct_bytes":([0-9]+)\}\}$)re");
  const std::string summary = testing::lines_of(direct.out).back();
  ASSERT_TRUE(std::regex_search(summary, match, direct_bytes)) << summary;
  EXPECT_GT(std::stoull(match[2]), 0u);
  EXPECT_LE(std::stoull(match[2]), std::stoull(match[1]));
  EXPECT_EQ(testing::lines_of(buffered.out).back().find("direct_bytes"), std::string::npos)
      << "a summary names direct bytes only where there were some";

  const auto human = testing::run_cli({"stream", model_.path().string(), "--direct-io", "on"});
  EXPECT_TRUE(std::regex_search(human.out, std::regex(R"re(\[[a-z_]+ \([0-9.]+ [KM]iB direct\), )re")))
      << human.out;
}

TEST_F(DirectIoCli, AModeOtherThanAutoOnOrOffIsAUsageError) {
  const auto flag = testing::run_cli({"stream", model_.path().string(), "--direct-io", "always"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.err, "tensorstream: error: --direct-io: always not in {auto,on,off} (see "
                      "tensorstream stream --help)\n");
  environment_.set("TENSORSTREAM_DIRECT_IO", "always");
  const auto variable = testing::run_cli({"stream", model_.path().string()});
  EXPECT_EQ(variable.exit_code, 2);
  EXPECT_EQ(variable.err,
            "tensorstream: error: TENSORSTREAM_DIRECT_IO='always' is not auto, on or off\n");
  EXPECT_EQ(testing::run_cli({"stream", model_.path().string(), "--direct-io", "off"}).exit_code,
            0)
      << "the flag wins over the variable";
}

}  // namespace
}  // namespace tensorstream
