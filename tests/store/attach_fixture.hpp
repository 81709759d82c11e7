#pragma once
// A store server whose rank 0 is a real manifest over two memfds of known bytes: a sealed
// "weights" region and a writable "kv_cache" region, as `tensorstream serve` passes them.

#include <fcntl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "store/server_fixture.hpp"
#include "tensorstream/store/manifest.hpp"

namespace tensorstream::store::testing {

/// `size` bytes of a pattern that differs per `seed`.
inline std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * seed + 3) & 0xff);
  return bytes;
}

/// Rank 0: the manifest below over weights_ and kv_; rank 2: the same manifest claiming a
/// weights region larger than its memfd; rank 3: a manifest of an unsupported version; rank 4:
/// rank 0's manifest over unsealed weights, and rank 5 over a KV cache that can be resized, as an
/// impostor would send; other ranks: "rank R is not served" (InvalidArgument).
class AttachServerTest : public StoreServerTest {
 public:
  static constexpr std::size_t weights_bytes = 1024;
  static constexpr std::size_t kv_bytes = 512;

  static std::string weights_content() { return pattern(weights_bytes, 7); }
  static std::string kv_content() { return pattern(kv_bytes, 13); }

  static Manifest manifest() {
    Manifest manifest;
    manifest.model = "file:///models/tiny/";
    manifest.config_json = "{\"model_type\": \"llama\"}";
    manifest.regions = {{"weights", weights_bytes, false, 0}, {"kv_cache", kv_bytes, true, 1}};
    manifest.kv_cache = KvCacheInfo{1, 2, 16, 1, 4, Dtype::F16};
    manifest.tensors = {
        {"model.embed_tokens.weight", Dtype::BF16, {4, 8}, "weights", 0, 64},
        {"model.norm.weight", Dtype::F32, {2, 4}, "weights", 256, 32},
        {"lm_head.scale", Dtype::F8_E4M3, {3}, "weights", 512, 3},
        {"model.layers.0.self_attn.kv_cache.key", Dtype::F16, {2, 16, 1, 4}, "kv_cache", 0, 256},
        {"model.layers.0.self_attn.kv_cache.value", Dtype::F16, {2, 16, 1, 4}, "kv_cache", 256,
         256},
    };
    return manifest;
  }

 protected:
  AttachServerTest() : weights_(sealed_memfd_with(weights_content())),
                       kv_(size_sealed_memfd_with(kv_content())),
                       unsealed_weights_(memfd_sealed_with(weights_content(), 0)),
                       unsized_kv_(memfd_sealed_with(kv_content(), F_SEAL_WRITE)) {}

  SocketServer::Handler attach_handler() {
    return [this](Request request) -> asio::awaitable<Reply> {
      Manifest served = manifest();
      if (request.rank == 2) served.regions[0].bytes = 2 * weights_bytes;
      if (request.rank == 3) served.version = manifest_version + 1;
      if (request.rank > 5 || request.rank == 1) {
        throw InvalidArgument("rank " + std::to_string(request.rank) + " is not served");
      }
      Reply reply;
      reply.json = to_json(served);
      reply.fds = {request.rank == 4 ? unsealed_weights_.get() : weights_.get(),
                   request.rank == 5 ? unsized_kv_.get() : kv_.get()};
      co_return reply;
    };
  }

  void start_attach_server() { start(options(), attach_handler()); }

  // The server's thread reads the descriptors: it is stopped before they are closed.
  ~AttachServerTest() override {
    if (server_) stop();
  }

  UniqueFd weights_;
  UniqueFd kv_;
  UniqueFd unsealed_weights_;
  UniqueFd unsized_kv_;
};

}  // namespace tensorstream::store::testing
