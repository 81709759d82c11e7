#include "model/read_head_config.hpp"

#include <span>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {

// A Hugging Face config.json is a few KB; anything far larger is not one.
constexpr std::uint64_t max_config_size = 16ull << 20;

boost::asio::awaitable<std::string> read_config_text(ObjectStore& store, std::string key) {
  const auto size = co_await store.size(key);
  if (size > max_config_size) {
    throw InvalidArgument(store.url(key) + ": " + std::to_string(size) +
                          " bytes is too large for a model config");
  }
  std::string text(size, '\0');
  co_await store.read_range(key, 0, std::as_writable_bytes(std::span(text)));
  co_return text;
}

boost::asio::awaitable<HeadConfig> read_head_config(ObjectStore& store, std::string key) {
  const std::string text = co_await read_config_text(store, key);
  co_return parse_head_config(text, store.url(key));
}

}  // namespace tensorstream::detail
