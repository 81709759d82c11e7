// `cmake --install` gives a working package: the tool runs from its prefix alone, the libraries
// carry their soname, and pkg-config builds a program against them.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/child_process.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_process;
using testing::TempDir;

class InstalledPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto installed = run_process(
        {TENSORSTREAM_CMAKE_COMMAND, "--install", TENSORSTREAM_BINARY_DIR, "--prefix", prefix()});
    ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  }

  std::string prefix() const { return (root_.path() / "prefix").string(); }

  // The installed files, wherever GNUInstallDirs put the libraries (lib or lib/<multiarch>).
  std::filesystem::path find(const std::string& name) const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(prefix())) {
      if (entry.path().filename() == name) return entry.path();
    }
    return {};
  }

  TempDir root_;
};

TEST_F(InstalledPackage, TheToolRunsFromItsPrefixAlone) {
  const std::string tool = prefix() + "/bin/tensorstream";
  // No LD_LIBRARY_PATH: the tool's RPATH must find the libraries beside it.
  const auto version = run_process({"/usr/bin/env", "-u", "LD_LIBRARY_PATH", tool, "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, testing::run_cli({"--version"}).out);

  const std::string model = (root_.path() / "model").string();
  ASSERT_EQ(run_process({tool, "gen-model", model}).exit_code, 0);
  const auto streamed = run_process({"/usr/bin/env", "-u", "LD_LIBRARY_PATH", tool, "stream",
                                     model, "--json"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_NE(streamed.out.find("{\"summary\":{\"tensors\":21,"), std::string::npos) << streamed.out;
}

TEST_F(InstalledPackage, TheLibrariesCarryTheirSoname) {
  for (const std::string library : {"libtensorstream_core", "libtensorstream"}) {
    const auto link = find(library + ".so");
    ASSERT_FALSE(link.empty()) << library;
    ASSERT_TRUE(std::filesystem::is_symlink(link)) << link;
    EXPECT_EQ(std::filesystem::read_symlink(link).string(), library + ".so.0.1");
    EXPECT_TRUE(std::filesystem::exists(link.parent_path() / (library + ".so.0.1.0"))) << library;
  }
}

TEST_F(InstalledPackage, PkgConfigBuildsAProgramAgainstTheCoreLibrary) {
#if defined(TENSORSTREAM_SANITIZED_BUILD)
  GTEST_SKIP() << "the sanitized libraries need the sanitizer's runtime, which pkg-config does not "
                  "name; the unsanitized build runs this";
#endif
  const auto pc = find("tensorstream-core.pc");
  ASSERT_FALSE(pc.empty());
  ASSERT_TRUE(std::filesystem::exists(pc.parent_path() / "tensorstream.pc"));
  const auto program = root_.path() / "probe.cpp";
  std::ofstream(program) << R"(#include <tensorstream/streaming/inspect.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  std::uint64_t tensors = 0;
  for (const auto& file : tensorstream::inspect(argv[1])) tensors += file.header.tensors.size();
  std::printf("%llu tensors\n", static_cast<unsigned long long>(tensors));
  return argc == 2 ? 0 : 1;
}
)";
  const auto flags = run_process({"/usr/bin/env", "PKG_CONFIG_PATH=" + pc.parent_path().string(),
                                  "pkg-config", "--cflags", "--libs", "tensorstream-core"});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  // Relative to the .pc file: right wherever the prefix was installed or moved to.
  EXPECT_NE(flags.out.find("-I" + pc.parent_path().string() + "/../../include"), std::string::npos)
      << flags.out;
  const auto binary = root_.path() / "probe";
  const auto compiled = run_process(
      {"/bin/sh", "-c", "c++ '" + program.string() + "' -o '" + binary.string() + "' " +
                            flags.out});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const std::string model = (root_.path() / "model").string();
  ASSERT_EQ(testing::run_cli({"gen-model", model}).exit_code, 0);
  const auto probed = run_process({binary.string(), model});
  ASSERT_EQ(probed.exit_code, 0) << probed.err;
  EXPECT_EQ(probed.out, "21 tensors\n");
}

}  // namespace
}  // namespace tensorstream
