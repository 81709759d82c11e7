#pragma once
// The Hugging Face cache's layout, which huggingface_hub, transformers and vLLM share:
//
//     CACHE/models--ORG--NAME/refs/REVISION            the commit a branch or tag named
//     CACHE/models--ORG--NAME/blobs/BLOB               the bytes of each file version
//     CACHE/models--ORG--NAME/snapshots/COMMIT/PATH    links to ../../blobs/BLOB

#include <filesystem>
#include <string>
#include <string_view>

#include "tensorstream/storage/hf_store.hpp"

namespace tensorstream::hf {

/// `cache/models--ORG--NAME` for `repo` "ORG/NAME".
std::filesystem::path repo_folder(const std::filesystem::path& cache, std::string_view repo);

/// Where the cache keeps `path` of `repo` at `commit`.
std::filesystem::path snapshot_file(const std::filesystem::path& cache, std::string_view repo,
                                    std::string_view commit, std::string_view path);

/// The snapshot of `repo` at `revision` that the cache holds, for offline use: the commit is the
/// revision itself or what `refs/REVISION` names, the files are those under
/// `snapshots/COMMIT/` (their blobs the names of the blobs they link to). Throws NotFoundError
/// naming `url` and the folder when the cache has no such revision or snapshot.
HfSnapshot cached_snapshot(const std::filesystem::path& cache, std::string_view repo,
                           std::string_view revision, const std::string& url);

}  // namespace tensorstream::hf
