#include "tensorstream/batching/prompt.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tensorstream {
namespace {

TEST(Prompt, EstimatesTokensFromItsLength) {
  EXPECT_EQ(Prompt("Hello, world!").estimate_tokens(), 4u);  // 13 / 4 + 1
  EXPECT_EQ(Prompt("").estimate_tokens(), 1u);
  EXPECT_EQ(Prompt("abc").estimate_tokens(), 1u);
  EXPECT_EQ(Prompt("abcd").estimate_tokens(), 2u);
  EXPECT_EQ(Prompt(std::string(4096, 'a')).estimate_tokens(), 1025u);
}

}  // namespace
}  // namespace tensorstream
