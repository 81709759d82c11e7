// scripts/check_coroutines.py holds for the tree as it is, and refuses each form of co_await
// expression that GCC 12 miscompiles while passing the named-local forms that replace them: a
// check that could not fail would prove nothing.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_process;

const std::string check_coroutines =
    std::string(TENSORSTREAM_SOURCE_DIR) + "/scripts/check_coroutines.py";

const std::string advice =
    " (GCC 12 may destroy its temporaries twice: bind them to named locals first)\n";

// A tree of its own with src/a.cpp holding `body` inside a coroutine.
class CoroutineRule : public ::testing::Test {
 protected:
  testing::ProcessResult check(const std::string& body) {
    std::filesystem::create_directories(root_.path() / "src");
    std::ofstream(root_.path() / "src" / "a.cpp")
        << "asio::awaitable<void> f() {\n" << body << "}\n";
    return run_process({"/usr/bin/env", "python3", check_coroutines, root_.path()});
  }

  std::string offence(int line, const std::string& what) {
    return (root_.path() / "src" / "a.cpp").string() + ":" + std::to_string(line) + ": " + what +
           advice;
  }

  testing::TempDir root_;
};

TEST(CoroutineRuleTree, NoCoAwaitOfTheTreeHoldsABracedTemporaryOrAConditional) {
  const auto result =
      run_process({"/usr/bin/env", "python3", check_coroutines, TENSORSTREAM_SOURCE_DIR});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "no co_await expression holds a braced temporary or a conditional\n");
}

TEST_F(CoroutineRule, BracedTemporariesAndListsAreRefused) {
  const auto result = check(
      "  co_await g(Options{.n = 1});\n"
      "  co_await h({\"a\", \"b\"});\n");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, offence(2, "a braced temporary in a co_await expression") +
                            offence(3, "a braced temporary in a co_await expression"));
  EXPECT_EQ(result.err, "2 co_await expression(s) GCC 12 may miscompile\n");
}

TEST_F(CoroutineRule, ACoAwaitInsideABracedInitializerIsRefused) {
  const auto result = check("  co_return Stat{.size = co_await size(key)};\n");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, offence(2, "co_await inside a braced initializer"));
}

TEST_F(CoroutineRule, ConditionalExpressionsAreRefused) {
  const auto result = check(
      "  co_await k(c ? s : s + \"/\");\n"
      "  x = c ? co_await a() : co_await b();\n");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, offence(2, "a conditional expression in a co_await expression") +
                            offence(3, "a conditional expression in a co_await expression"));
}

TEST_F(CoroutineRule, NamedLocalsLambdaBodiesCommentsAndStringsPass) {
  const auto result = check(
      "  Options options{.n = 1};\n"
      "  co_await g(options);\n"
      "  const int attempts = c ? 3 : 1;\n"
      "  co_await h(attempts);\n"
      "  // co_await g(Options{.n = 1});\n"
      "  const char* text = \"co_await x{c ? 1 : 2}\";\n"
      "  co_await asio::co_spawn(ex, [&]() -> asio::awaitable<void> { int y = c ? 1 : 2; "
      "co_return; }, asio::use_awaitable);\n"
      "  co_await run([this] { return S{1}; });\n"
      "  if (co_await ready()) { S s{1}; }\n"
      "  for (auto& x : co_await list()) { T t{x}; }\n"
      "  if constexpr (requires { r.prepare(); }) co_await r.prepare();\n");
  EXPECT_EQ(result.exit_code, 0) << result.out;
}

}  // namespace
}  // namespace tensorstream
