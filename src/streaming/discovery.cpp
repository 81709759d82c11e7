#include "streaming/discovery.hpp"

#include <algorithm>
#include <filesystem>

#include "streaming/run_concurrently.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;

// Most headers fit in the first read, which saves a round trip per file.
constexpr std::uint64_t first_read_size = 64 * 1024;

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view file_name(std::string_view key) {
  const auto slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

asio::awaitable<SafetensorsFile> read_header(ObjectStore& store, std::string key) {
  SafetensorsFile file;
  file.url = store.url(key);
  file.size = co_await store.size(key);
  if (file.size < 8) {
    throw FormatError(file.url + ": " + std::to_string(file.size) +
                      " bytes is too small for a safetensors file (the header length alone is 8)");
  }
  std::vector<std::byte> bytes(std::min(file.size, first_read_size));
  co_await store.read_range(key, 0, bytes);
  const std::uint64_t length =
      parse_header_length(std::span<const std::byte, 8>(bytes.data(), 8), file.size, file.url);
  const std::uint64_t have = bytes.size();
  if (8 + length > have) {
    bytes.resize(8 + length);
    co_await store.read_range(key, have, std::span(bytes).subspan(have));
  }
  file.header = parse_header(
      std::string_view(reinterpret_cast<const char*>(bytes.data()) + 8, length), file.size,
      file.url);
  file.key = std::move(key);
  co_return file;
}

}  // namespace

Url resolve_url(const std::string& remote_path) {
  Url url = Url::parse(remote_path);
  if (url.scheme == "file") {
    std::error_code ec;
    url.path = std::filesystem::absolute(url.path, ec).string();
    if (!url.is_prefix() && std::filesystem::is_directory(url.path, ec)) url.path.push_back('/');
  }
  return url;
}

asio::awaitable<std::vector<std::string>> select_files(ObjectStore& store, const Url& url,
                                                       const StreamerOptions& options) {
  if (!url.is_prefix()) {
    if (options.tensor_parallel_size > 1) {
      throw InvalidArgument(url.str() +
                            ": tensor_parallel_size > 1 needs a prefix holding rank files, "
                            "not a single file");
    }
    co_return std::vector<std::string>{url.path};
  }
  if (!store.can_list()) {
    if (options.tensor_parallel_size > 1) {
      throw InvalidArgument(url.str() + ": rank files cannot be found without listing");
    }
    co_return std::vector<std::string>{url.path + "model.safetensors"};
  }

  std::string prefix = "";
  std::string pattern = "*.safetensors";
  if (options.tensor_parallel_size > 1) {
    prefix = "model-rank-" + std::to_string(options.rank) + "-part-";
    pattern = prefix + "*.safetensors";
  }
  std::vector<std::string> keys;
  for (auto& object : co_await store.list(url.path, ListDepth::one_level)) {
    const auto name = file_name(object.key);
    if (name.starts_with(prefix) && ends_with(name, ".safetensors")) keys.push_back(object.key);
  }
  if (keys.empty()) throw NotFoundError(url.str(), "no files found matching pattern: " + pattern);
  std::sort(keys.begin(), keys.end());
  co_return keys;
}

asio::awaitable<std::vector<SafetensorsFile>> read_headers(ObjectStore& store,
                                                           std::vector<std::string> keys) {
  std::vector<SafetensorsFile> files(keys.size());
  co_await run_concurrently(keys.size(), [&](std::size_t i) -> asio::awaitable<void> {
    files[i] = co_await read_header(store, keys[i]);
  });
  co_return files;
}

}  // namespace tensorstream::detail
