// `tensorstream attach` against a store server run by the test process.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/attach_fixture.hpp"
#include "support/process.hpp"
#include "support/sha256.hpp"

namespace tensorstream::store::testing {
namespace {

using tensorstream::testing::lines_of;
using tensorstream::testing::run_cli;

using AttachCliTest = AttachServerTest;

std::string sha256_of(const std::string& bytes) {
  return tensorstream::testing::sha256_hex(
      {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
}

TEST_F(AttachCliTest, JsonLinesWithChecksumsOfTheMappedBytes) {
  start_attach_server();
  const auto result =
      run_cli({"attach", socket_path_.string(), "--rank", "0", "--json", "--checksum", "sha256"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::string weights = weights_content();
  const std::string kv = kv_content();
  const std::vector<std::string> expected = {
      "{\"name\":\"model.embed_tokens.weight\",\"dtype\":\"BF16\",\"shape\":[4,8],"
      "\"region\":\"weights\",\"offset\":0,\"bytes\":64,\"sha256\":\"" +
          sha256_of(weights.substr(0, 64)) + "\"}",
      "{\"name\":\"model.norm.weight\",\"dtype\":\"F32\",\"shape\":[2,4],"
      "\"region\":\"weights\",\"offset\":256,\"bytes\":32,\"sha256\":\"" +
          sha256_of(weights.substr(256, 32)) + "\"}",
      "{\"name\":\"lm_head.scale\",\"dtype\":\"F8_E4M3\",\"shape\":[3],"
      "\"region\":\"weights\",\"offset\":512,\"bytes\":3,\"sha256\":\"" +
          sha256_of(weights.substr(512, 3)) + "\"}",
      "{\"name\":\"model.layers.0.self_attn.kv_cache.key\",\"dtype\":\"F16\","
      "\"shape\":[2,16,1,4],\"region\":\"kv_cache\",\"offset\":0,\"bytes\":256,\"sha256\":\"" +
          sha256_of(kv.substr(0, 256)) + "\"}",
      "{\"name\":\"model.layers.0.self_attn.kv_cache.value\",\"dtype\":\"F16\","
      "\"shape\":[2,16,1,4],\"region\":\"kv_cache\",\"offset\":256,\"bytes\":256,\"sha256\":\"" +
          sha256_of(kv.substr(256, 256)) + "\"}",
      "{\"summary\":{\"rank\":0,\"generation\":1,\"tensors\":5,\"bytes\":611,\"regions\":["
      "{\"name\":\"weights\",\"bytes\":1024,\"writable\":false},"
      "{\"name\":\"kv_cache\",\"bytes\":512,\"writable\":true}]}}",
  };
  EXPECT_EQ(lines_of(result.out), expected);
}

TEST_F(AttachCliTest, TextLines) {
  start_attach_server();
  const auto result = run_cli({"attach", socket_path_.string(), "--rank", "0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> expected = {
      "model.embed_tokens.weight\tBF16\t[4,8]\tweights+0\t64",
      "model.norm.weight\tF32\t[2,4]\tweights+256\t32",
      "lm_head.scale\tF8_E4M3\t[3]\tweights+512\t3",
      "model.layers.0.self_attn.kv_cache.key\tF16\t[2,16,1,4]\tkv_cache+0\t256",
      "model.layers.0.self_attn.kv_cache.value\tF16\t[2,16,1,4]\tkv_cache+256\t256",
      "attached rank 0 of " + socket_path_.string() +
          ", generation 1: 5 tensors, 611 B; regions weights (1.0 KiB, read-only), kv_cache (512 B, writable)",
  };
  EXPECT_EQ(lines_of(result.out), expected);
}

TEST_F(AttachCliTest, NoServerNamesTheSocketOnceTheTimeoutHasPassed) {
  const auto result = run_cli({"attach", socket_path_.string(), "--rank", "0", "--timeout", "0.3"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "tensorstream: error: " + socket_path_.string() +
                            ": no server is listening (no socket file); gave up after waiting "
                            "300 ms\n");
}

TEST_F(AttachCliTest, ShortRegionIsARuntimeError) {
  start_attach_server();
  const auto result = run_cli({"attach", socket_path_.string(), "--rank", "2"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "tensorstream: error: " + socket_path_.string() +
                            ": region \"weights\" has 1024 bytes, the manifest says 2048\n");
}

TEST_F(AttachCliTest, AnImpostorsUnsealedWeightsAreRefused) {
  start_attach_server();
  const auto result = run_cli({"attach", socket_path_.string(), "--rank", "4"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "tensorstream: error: " + socket_path_.string() +
                            ": refusing region \"weights\": its memory is not sealed read-only "
                            "as a store server's is, so whoever answered on this socket could "
                            "change it under this process\n");
}

TEST_F(AttachCliTest, UsageErrors) {
  const auto checksum =
      run_cli({"attach", socket_path_.string(), "--rank", "0", "--checksum", "md5"});
  EXPECT_EQ(checksum.exit_code, 2);
  EXPECT_EQ(checksum.err,
            "tensorstream: error: --checksum: unsupported algorithm 'md5' (supported: sha256)\n");
  const auto timeout =
      run_cli({"attach", socket_path_.string(), "--rank", "0", "--timeout", "-1"});
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_EQ(timeout.err,
            "tensorstream: error: --timeout: -1 is not between 0 and 86400 seconds\n");
}

}  // namespace
}  // namespace tensorstream::store::testing
