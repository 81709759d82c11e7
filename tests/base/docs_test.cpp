// Every link of README.md and docs/ leads somewhere (scripts/check_docs.py), and the check
// refuses a link to a missing page or a missing heading: a check that could not fail would prove
// nothing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_process;

const std::string check_docs = std::string(TENSORSTREAM_SOURCE_DIR) + "/scripts/check_docs.py";

// A tree of its own: README.md and docs/ with the given pages.
class DocsTree : public ::testing::Test {
 protected:
  void SetUp() override { write("README.md", "# Project\n\nSee [the tool](docs/cli.md).\n"); }

  void write(const std::string& path, const std::string& text) {
    const auto file = root_.path() / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  testing::ProcessResult check() {
    return run_process({"/usr/bin/env", "python3", check_docs, root_.path()});
  }

  testing::TempDir root_;
};

TEST(Docs, EveryLinkOfTheTreeResolves) {
  const auto result =
      run_process({"/usr/bin/env", "python3", check_docs, TENSORSTREAM_SOURCE_DIR});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "");
}

TEST_F(DocsTree, LinksThatResolvePass) {
  write("docs/cli.md",
        "# The command-line tool\n\n"
        "## Output\n\n"
        "## Output\n\n"
        "### `tensorstream attach SOCKET --rank R`\n\n"
        "## http(s)://\n\n"
        "Back to the [README](../README.md), [the second output](#output-1), [first](#output),\n"
        "[attach](#tensorstream-attach-socket---rank-r), [proxies](#https), the\n"
        "[format](spec/traw.md#the-header), an [image](../logo.svg), [a site](https://x.org/y).\n");
  write("docs/spec/traw.md",
        "# TRAW format\n\n## The header\n\nSee [the tool](../cli.md#output).\n");
  write("logo.svg", "<svg/>");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "");
}

TEST_F(DocsTree, ALinkToAMissingPageFailsNamingFileLineAndTarget) {
  write("docs/cli.md",
        "# The command-line tool\n\nSee\n[Tuning](tuning.md) and [Python](python.md#errors).\n");
  write("docs/python.md", "# Python\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            "docs/cli.md:4: broken link tuning.md: no such file\n"
            "docs/cli.md:4: broken link python.md#errors: no heading with anchor #errors in "
            "docs/python.md\n");
  EXPECT_EQ(result.err, "2 broken link(s)\n");
}

TEST_F(DocsTree, ALinkToAMissingAnchorFails) {
  write("README.md",
        "# Project\n\n## Install\n\n[Quick start](#quick-start), [tool](docs/cli.md#urls)\n");
  write("docs/cli.md", "# The command-line tool\n\n## URL\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            "README.md:5: broken link #quick-start: no heading with anchor #quick-start in "
            "README.md\n"
            "README.md:5: broken link docs/cli.md#urls: no heading with anchor #urls in "
            "docs/cli.md\n");
}

TEST_F(DocsTree, ADuplicateHeadingHasOnlyAsManySuffixesAsRepeats) {
  write("docs/cli.md", "# Tool\n\n## Output\n\n## Output\n\n[third](#output-2)\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            "docs/cli.md:7: broken link #output-2: no heading with anchor #output-2 in "
            "docs/cli.md\n");
}

TEST_F(DocsTree, LinksAndHeadingsInCodeAreIgnored) {
  write("docs/cli.md",
        "# Tool\n\n"
        "```cpp\n"
        "// [see](missing.md)\n"
        "# Not a heading\n"
        "auto f = [&]() {};\n"
        "```\n\n"
        "~~~\n[x](gone.md)\n~~~\n\n"
        "Inline: `[x](gone.md)`, and [not a heading](#not-a-heading).\n");
  const auto result = check();
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            "docs/cli.md:13: broken link #not-a-heading: no heading with anchor #not-a-heading in "
            "docs/cli.md\n");
}

TEST_F(DocsTree, AUsageErrorExitsTwo) {
  const auto without_root = run_process({"/usr/bin/env", "python3", check_docs});
  EXPECT_EQ(without_root.exit_code, 2);
  EXPECT_EQ(without_root.out, "");
  EXPECT_EQ(without_root.err, "check_docs.py: error: usage: check_docs.py ROOT\n");

  const auto elsewhere = root_.path() / "elsewhere";
  std::filesystem::create_directories(elsewhere);
  const auto no_readme = run_process({"/usr/bin/env", "python3", check_docs, elsewhere});
  EXPECT_EQ(no_readme.exit_code, 2);
  EXPECT_EQ(no_readme.out, "");
  EXPECT_EQ(no_readme.err,
            "check_docs.py: error: " + elsewhere.string() + " has no README.md\n");
}

}  // namespace
}  // namespace tensorstream
