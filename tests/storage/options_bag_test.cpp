#include "tensorstream/storage/options_bag.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {
namespace {

struct VaultOptions {
  std::string token = "none";
  int retries = 3;
};

// Every backend's options live in the bag: adding one changes no layout.
static_assert(sizeof(StoreOptions) == sizeof(OptionsBag));

TEST(OptionsBag, UnsetOptionsReadAsTheTypesDefaults) {
  const OptionsBag bag;
  EXPECT_EQ(bag.find<VaultOptions>(), nullptr);
  EXPECT_EQ(bag.get<VaultOptions>().token, "none");
  EXPECT_EQ(bag.find<VaultOptions>(), nullptr) << "reading defaults added nothing";
}

TEST(OptionsBag, GetCreatesTheValueToChangeInPlace) {
  OptionsBag bag;
  bag.get<VaultOptions>().token = "s.abc";
  bag.get<VaultOptions>().retries = 5;
  ASSERT_NE(bag.find<VaultOptions>(), nullptr);
  EXPECT_EQ(bag.find<VaultOptions>()->token, "s.abc");
  EXPECT_EQ(bag.find<VaultOptions>()->retries, 5);
}

TEST(OptionsBag, SetReplacesTheValueOfItsType) {
  OptionsBag bag;
  bag.get<VaultOptions>().retries = 5;
  bag.set(VaultOptions{.token = "s.new"});
  EXPECT_EQ(bag.find<VaultOptions>()->token, "s.new");
  EXPECT_EQ(bag.find<VaultOptions>()->retries, 3);
}

TEST(OptionsBag, CopiesAreValuesThatChangeApart) {
  OptionsBag original;
  original.get<VaultOptions>().token = "first";
  OptionsBag copy = original;
  copy.get<VaultOptions>().token = "changed in the copy";
  EXPECT_EQ(original.find<VaultOptions>()->token, "first");
  original.get<VaultOptions>().retries = 9;
  EXPECT_EQ(copy.find<VaultOptions>()->retries, 3);
  EXPECT_EQ(copy.find<VaultOptions>()->token, "changed in the copy");
}

TEST(StoreOptions, EachBuiltInBackendsOptionsAreTheBagsValueOfTheirType) {
  StoreOptions options;
  options.s3().region = "eu-west-1";
  options.http().max_retries = 2;
  options.get<VaultOptions>().token = "s.abc";
  EXPECT_EQ(options.find<S3Options>()->region, "eu-west-1");
  EXPECT_EQ(options.get<HttpOptions>().max_retries, 2);
  EXPECT_EQ(options.find<GcsOptions>(), nullptr);
  const StoreOptions& read = options;
  EXPECT_EQ(read.gcs().endpoint, GcsOptions{}.endpoint);
  EXPECT_EQ(read.get<VaultOptions>().token, "s.abc");
}

}  // namespace
}  // namespace tensorstream
