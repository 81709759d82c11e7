#include "tensorstream/store/manifest.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

Manifest sample() {
  Manifest manifest;
  manifest.rank = 1;
  manifest.tensor_parallel_size = 2;
  manifest.model = "s3://bucket/model \"q\"/";
  manifest.config_json = "{\n  \"model_type\": \"llama\",\n  \"num_key_value_heads\": 8\n}";
  manifest.regions = {{"weights", 1024, false, 0}, {"kv_cache", 512, true, 1}};
  manifest.kv_cache = KvCacheInfo{1, 2, 16, 1, 4, Dtype::F16};
  manifest.tensors = {
      {"model.embed_tokens.weight", Dtype::BF16, {4, 8}, "weights", 0, 64},
      {"model.norm.weight", Dtype::F32, {8}, "weights", 256, 32},
      {"model.layers.0.self_attn.kv_cache.key", Dtype::F16, {2, 16, 1, 4}, "kv_cache", 0, 256},
      {"model.layers.0.self_attn.kv_cache.value", Dtype::F16, {2, 16, 1, 4}, "kv_cache", 256,
       256},
  };
  return manifest;
}

std::string error_of(const std::string& json) {
  try {
    parse_manifest(json, "/run/store.sock");
  } catch (const FormatError& error) {
    return error.what();
  }
  return "no error";
}

// The sample's JSON with the first `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string json = to_json(sample());
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return json.replace(at, from.size(), to);
}

TEST(Manifest, WritesTheDocumentedForm) {
  Manifest manifest = sample();
  manifest.config_json = "{\"a\":1}";
  manifest.tensors.resize(1);
  EXPECT_EQ(to_json(manifest),
            "{\"version\":1,\"rank\":1,\"tp\":2,\"generation\":1,\"device\":\"cpu\","
            "\"model\":\"s3://bucket/model \\\"q\\\"/\",\"config\":{\"a\":1},\"fused\":true,"
            "\"regions\":[{\"name\":\"weights\",\"bytes\":1024,\"writable\":false,\"fd_index\":0},"
            "{\"name\":\"kv_cache\",\"bytes\":512,\"writable\":true,\"fd_index\":1}],"
            "\"kv_cache\":{\"num_layers\":1,\"num_blocks\":2,\"block_size\":16,\"kv_heads\":1,"
            "\"head_dim\":4,\"dtype\":\"F16\"},"
            "\"tensors\":[{\"name\":\"model.embed_tokens.weight\",\"dtype\":\"BF16\","
            "\"shape\":[4,8],\"region\":\"weights\",\"offset\":0,\"bytes\":64}]}");
}

TEST(Manifest, RoundTripsWithTheConfigVerbatim) {
  const Manifest manifest = sample();
  const Manifest parsed = parse_manifest(to_json(manifest), "socket");
  EXPECT_EQ(parsed, manifest);
  EXPECT_EQ(parsed.config_json, manifest.config_json);
}

TEST(Manifest, RoundTripsWithoutAKvCache) {
  Manifest manifest = sample();
  manifest.kv_cache.reset();
  manifest.regions.resize(1);
  manifest.tensors.resize(2);
  manifest.fused = false;
  EXPECT_EQ(to_json(manifest).find("kv_cache"), std::string::npos);
  EXPECT_EQ(parse_manifest(to_json(manifest), "socket"), manifest);
}

TEST(Manifest, IgnoresUnknownMembers) {
  EXPECT_EQ(parse_manifest(edited("\"fused\"", "\"later\":[1,{\"x\":2}],\"fused\""), "s"),
            sample());
}

TEST(Manifest, SaysItsGenerationWhichIsOneWhereAnOlderServerLeftItOut) {
  Manifest reloaded = sample();
  reloaded.generation = 7;
  EXPECT_EQ(parse_manifest(to_json(reloaded), "s").generation, 7u);
  EXPECT_EQ(parse_manifest(edited("\"generation\":1,", ""), "s"), sample());
  EXPECT_EQ(error_of(edited("\"generation\":1", "\"generation\":0")),
            "/run/store.sock: invalid manifest: generation 0 is out of range");
}

TEST(Manifest, RejectsInvalidJson) {
  EXPECT_EQ(error_of("[1]"), "/run/store.sock: invalid manifest: not one JSON object");
  EXPECT_EQ(error_of(to_json(sample()) + "x"),
            "/run/store.sock: invalid manifest: not one JSON object");
  EXPECT_EQ(error_of(edited("\"tp\":2", "\"tp\":")),
            "/run/store.sock: invalid manifest: tp is not an integer");
}

TEST(Manifest, RejectsAnotherVersion) {
  EXPECT_EQ(error_of(edited("\"version\":1", "\"version\":2")),
            "/run/store.sock: invalid manifest: version 2 is not supported (this build reads 1)");
}

TEST(Manifest, RejectsMissingMembers) {
  EXPECT_EQ(error_of(edited("\"rank\":1,", "")),
            "/run/store.sock: invalid manifest: rank is missing");
  EXPECT_EQ(error_of(edited(",\"fd_index\":1", "")),
            "/run/store.sock: invalid manifest: regions[1].fd_index is missing");
  EXPECT_EQ(error_of(edited(",\"head_dim\":4", "")),
            "/run/store.sock: invalid manifest: kv_cache.head_dim is missing");
}

TEST(Manifest, RejectsWrongTypes) {
  EXPECT_EQ(error_of(edited("\"rank\":1", "\"rank\":1.0")),
            "/run/store.sock: invalid manifest: rank is not an integer");
  EXPECT_EQ(error_of(edited("\"tp\":2", "\"tp\":0")),
            "/run/store.sock: invalid manifest: tp 0 is out of range");
  EXPECT_EQ(error_of(edited("\"device\":\"cpu\"", "\"device\":1")),
            "/run/store.sock: invalid manifest: device is not a string");
  EXPECT_EQ(error_of(edited("\"config\":{", "\"config\":[{")),
            "/run/store.sock: invalid manifest: config is not an object");
  EXPECT_EQ(error_of(edited("\"fused\":true", "\"fused\":1")),
            "/run/store.sock: invalid manifest: fused is not a boolean");
  EXPECT_EQ(error_of(edited("\"regions\":[", "\"regions\":{\"x\":[")),
            "/run/store.sock: invalid manifest: regions is not an array");
  EXPECT_EQ(error_of(edited("\"writable\":false", "\"writable\":\"no\"")),
            "/run/store.sock: invalid manifest: regions[0].writable is not a boolean");
  EXPECT_EQ(error_of(edited("\"bytes\":1024", "\"bytes\":-1")),
            "/run/store.sock: invalid manifest: regions[0].bytes is not a non-negative integer");
  EXPECT_EQ(error_of(edited("\"shape\":[4,8]", "\"shape\":[4,-8]")),
            "/run/store.sock: invalid manifest: tensors[0].shape[1] -8 is negative");
  EXPECT_EQ(error_of(edited("\"rank\":1", "\"rank\":1,\"rank\":1")),
            "/run/store.sock: invalid manifest: rank appears twice");
}

TEST(Manifest, RejectsBadRegionIndexes) {
  EXPECT_EQ(error_of(edited("\"fd_index\":1", "\"fd_index\":2")),
            "/run/store.sock: invalid manifest: regions[1].fd_index 2 is not below the number of "
            "regions (2)");
  EXPECT_EQ(error_of(edited("\"fd_index\":1", "\"fd_index\":0")),
            "/run/store.sock: invalid manifest: regions[1].fd_index 0 appears twice");
  EXPECT_EQ(error_of(edited("\"name\":\"kv_cache\"", "\"name\":\"weights\"")),
            "/run/store.sock: invalid manifest: regions[1].name \"weights\" appears twice");
}

TEST(Manifest, RejectsUnknownDtypes) {
  EXPECT_EQ(error_of(edited("\"dtype\":\"BF16\"", "\"dtype\":\"Q4\"")),
            "/run/store.sock: invalid manifest: tensors[0].dtype \"Q4\" is not a known dtype");
  EXPECT_EQ(error_of(edited("\"dtype\":\"F16\"}", "\"dtype\":\"f16\"}")),
            "/run/store.sock: invalid manifest: kv_cache.dtype \"f16\" is not a known dtype");
}

TEST(Manifest, RejectsBytesThatDoNotMatchTheShape) {
  EXPECT_EQ(error_of(edited("\"bytes\":64", "\"bytes\":32")),
            "/run/store.sock: invalid manifest: tensors[0].bytes 32 does not match its shape and "
            "dtype (64)");
  EXPECT_EQ(error_of(edited("\"shape\":[4,8]", "\"shape\":[4294967296,4294967296]")),
            "/run/store.sock: invalid manifest: tensors[0].bytes 64 does not match its shape and "
            "dtype (more than 2^64)");
}

TEST(Manifest, RejectsTensorsOutsideTheirRegion) {
  EXPECT_EQ(error_of(edited("\"offset\":256", "\"offset\":128")),
            "/run/store.sock: invalid manifest: tensors[1].offset 128 is not a multiple of 256");
  EXPECT_EQ(error_of(edited("\"offset\":256", "\"offset\":1024")),
            "/run/store.sock: invalid manifest: tensors[1].offset 1024 + 32 bytes exceeds region "
            "\"weights\" (1024 bytes)");
  EXPECT_EQ(error_of(edited("\"region\":\"weights\"", "\"region\":\"gpu\"")),
            "/run/store.sock: invalid manifest: tensors[0].region \"gpu\" is not among the "
            "regions");
  EXPECT_EQ(error_of(edited("\"name\":\"model.norm.weight\"",
                            "\"name\":\"model.embed_tokens.weight\"")),
            "/run/store.sock: invalid manifest: tensors[1].name \"model.embed_tokens.weight\" "
            "appears twice");
}

}  // namespace
}  // namespace tensorstream::store
