#include "storage/hf/hf_cache.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>

#include "base/ascii.hpp"
#include "storage/hf/hub_api.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::hf {

std::filesystem::path repo_folder(const std::filesystem::path& cache, std::string_view repo) {
  std::string name = "models";
  for (std::size_t start = 0; start <= repo.size();) {
    const auto slash = std::min(repo.find('/', start), repo.size());
    name += "--";
    name += repo.substr(start, slash - start);
    start = slash + 1;
  }
  return cache / name;
}

std::filesystem::path snapshot_file(const std::filesystem::path& cache, std::string_view repo,
                                    std::string_view commit, std::string_view path) {
  return repo_folder(cache, repo) / "snapshots" / std::string(commit) / std::string(path);
}

HfSnapshot cached_snapshot(const std::filesystem::path& cache, std::string_view repo,
                           std::string_view revision, const std::string& url) {
  const auto folder = repo_folder(cache, repo);
  HfSnapshot snapshot{std::string(repo), std::string(revision), {}, {}};
  if (is_commit(revision)) {
    snapshot.commit = std::string(revision);
  } else {
    const auto ref = folder / "refs" / std::string(revision);
    std::ifstream in(ref, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    snapshot.commit = std::string(ascii_trim(text));
    if (!is_commit(snapshot.commit)) {
      throw NotFoundError(url, "offline (HF_HUB_OFFLINE), and the Hugging Face cache has no "
                               "revision " + std::string(revision) + " of " +
                               std::string(repo) + " (no commit in " + ref.string() + ")");
    }
  }
  const auto root = folder / "snapshots" / snapshot.commit;
  std::error_code error;
  if (!std::filesystem::is_directory(root, error)) {
    throw NotFoundError(url, "offline (HF_HUB_OFFLINE), and the Hugging Face cache has no "
                             "snapshot of commit " + snapshot.commit + " of " +
                             std::string(repo) + " (no folder " + root.string() + ")");
  }
  for (std::filesystem::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    HfFile file;
    file.path = it->path().lexically_relative(root).generic_string();
    file.size = it->file_size(error);
    if (it->is_symlink(error)) {
      file.blob = std::filesystem::read_symlink(it->path(), error).filename().string();
    }
    if (!error) snapshot.files.push_back(std::move(file));
  }
  if (error) {
    throw StorageError(url, "cannot list the cached snapshot " + root.string() + ": " +
                                error.message());
  }
  std::sort(snapshot.files.begin(), snapshot.files.end(),
            [](const HfFile& a, const HfFile& b) { return a.path < b.path; });
  return snapshot;
}

}  // namespace tensorstream::hf
