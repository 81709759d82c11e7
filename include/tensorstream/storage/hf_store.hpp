#pragma once
/// @file
/// The hf:// object store: model repositories of the Hugging Face Hub, each read at one commit.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/file_options.hpp"
#include "tensorstream/storage/hf_options.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// One file of a repository at one commit.
struct HfFile {
  std::string path;        ///< In the repository: "model-00001-of-00002.safetensors".
  std::uint64_t size = 0;  ///< Bytes.
  /// What the Hub's cache names the file's blob by: the SHA-256 of a file stored with LFS (or
  /// Xet), else its git blob id.
  std::string blob;
};

/// A repository at the commit its revision named when the store first asked.
struct HfSnapshot {
  std::string repo;      ///< "ORG/NAME".
  std::string revision;  ///< As the URL named it: a branch, a tag or a commit.
  std::string commit;    ///< The commit's 40 hex digits.
  std::vector<HfFile> files;  ///< Every file of the commit, sorted by path.
};

/// Reads the model repositories of one organisation of the Hugging Face Hub (or a mirror, or the
/// local Hugging Face cache alone), over the Hub's HTTP API as huggingface_hub does.
///
/// Keys are the paths of hf:// URLs, `hf://ORG/NAME[@REVISION][/PATH]`: "/NAME@v1.0/model.safetensors"
/// names model.safetensors of ORG/NAME at tag v1.0, and "/NAME" the whole repository at main.
/// A revision with '/' in it is percent-encoded: "/NAME@refs%2Fpr%2F1".
///
/// - **One commit per stream.** The first access to a repository and revision resolves the
///   revision to its commit (`/api/models/ORG/NAME/revision/REV`) and lists the commit's files
///   with their sizes (`/api/models/ORG/NAME/tree/COMMIT`, every page); every later access of the
///   store reads that commit, so a push during a load cannot mix two versions.
/// - **Bytes** come from `/ORG/NAME/resolve/COMMIT/PATH`, which answers small files itself and
///   redirects large ones to a CDN. The CDN URL is reused for every range of the file until it
///   stops working (an expired signature: 403), then resolved again; ranges are pinned to the
///   file's ETag. The token goes to the Hub's own server only, never to where it redirects.
/// - **The local cache**: a file of the commit found in the Hugging Face cache
///   (`CACHE/models--ORG--NAME/snapshots/COMMIT/PATH`) with the size the Hub lists is read from
///   there, with no request for it. Offline (HF_HUB_OFFLINE=1) only the cache is read: the
///   commit comes from `refs/REVISION` (or is the revision), the files from its snapshot.
///
/// Errors name the repository and revision: a gated repository says where to accept its
/// license; a missing repository, revision or file is a NotFoundError; a refused token names
/// where it came from, never its value. 429 answers are retried after their Retry-After.
class TENSORSTREAM_API HfStore final : public ObjectStore {
 public:
  /// @param executor where the store's network and file I/O runs.
  /// @param organisation an hf:// URL; only its organisation (host) is used.
  /// @param http timeouts, retries, pool size and TLS trust of the requests to the Hub and CDN.
  /// @param options the endpoint, token and cache.
  /// @param file how cached files are read.
  /// Throws InvalidArgument for another scheme, `hf://datasets/...` and `hf://spaces/...` (only
  /// model repositories are read), or a malformed setting.
  HfStore(boost::asio::any_io_executor executor, const Url& organisation, HttpOptions http = {},
          HfOptions options = {}, FileOptions file = {});

  /// Closes the pooled connections. Every operation must have finished.
  ~HfStore() override;

  HfStore(const HfStore&) = delete;
  HfStore& operator=(const HfStore&) = delete;

  /// "hf://ORG" followed by `key`.
  std::string url(const std::string& key) const override;

  /// The file's size, as the commit's listing says.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;

  /// The size, and the file's blob as its version: "blob 3a7b...". Not the commit: the same
  /// bytes at a later commit are the same version (so `--cache` keeps them across a commit that
  /// changes other files), as in the Hub's cache. snapshot() says the commit.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;

  /// Always true.
  bool can_list() const override { return true; }

  /// The files of the commit under `prefix` ("/NAME@REV/" or a folder in it), sorted by key.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;

  /// Reads `destination.size()` bytes of the file at `offset`, from the cache or the Hub.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;

  /// The repository and commit `key` names and the commit's files, resolved at the store's
  /// first access to that repository and revision.
  boost::asio::awaitable<HfSnapshot> snapshot(std::string key);

  /// Requests to the Hub and CDN, and bytes from them and from the cache; io_mode "https" (or
  /// "http"), "cache" offline.
  StoreStats stats() const override;

  /// The endpoint, where the token came from and the cache, for logs, e.g.
  /// "https://huggingface.co (token from HF_TOKEN), cache /root/.cache/huggingface/hub", or
  /// "offline, cache ...".
  const std::string& describe() const;

 private:
  struct Impl;  // The settings, the HTTP client, the cache's file store and the snapshots.
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorstream
