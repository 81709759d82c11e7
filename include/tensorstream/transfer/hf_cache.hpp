#pragma once
/// @file
/// Copying files of a Hugging Face Hub repository into the local Hugging Face cache, in the
/// layout huggingface_hub writes, so that transformers and vLLM find them there afterwards.

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/transfer/prefetch.hpp"

namespace tensorstream {

/// What prefetch_to_hf_cache() stored.
struct HfCachePrefetchResult {
  /// The files, relative to the prefix copied, and their total size.
  PrefetchResult files;
  std::string commit;              ///< The commit the files are of.
  std::filesystem::path snapshot;  ///< `CACHE/models--ORG--NAME/snapshots/COMMIT`.
};

/// Copies the files under `url` (`hf://ORG/NAME[@REVISION][/PATH]`) that `options` selects, as
/// prefetch() selects them, into the Hugging Face cache of `options.store.hf()` (HF_HUB_CACHE,
/// else HF_HOME/hub, else ~/.cache/huggingface/hub): each file's bytes as
/// `models--ORG--NAME/blobs/BLOB` (a blob already there is kept), linked from
/// `snapshots/COMMIT/PATH` by a relative symbolic link, and `refs/REVISION` naming the commit
/// when the revision is a branch or tag. Files are written under temporary names and renamed
/// into place, so the cache never shows a partial file. The bytes are read through the cache
/// `options.store` configures (CachedStore), if any, as a stream's are; the commit and its files
/// are HfStore's to tell all the same, CacheMode::offline included. Runs on the awaiting
/// coroutine's executor. Throws InvalidArgument for another scheme or an unknown cache
/// directory, and what prefetch() throws.
TENSORSTREAM_API
boost::asio::awaitable<HfCachePrefetchResult> prefetch_to_hf_cache(std::string url,
                                                                   PrefetchOptions options);

/// prefetch_to_hf_cache() on a private io_context of the calling thread.
TENSORSTREAM_API
HfCachePrefetchResult prefetch_to_hf_cache_blocking(std::string url, PrefetchOptions options);

}  // namespace tensorstream
