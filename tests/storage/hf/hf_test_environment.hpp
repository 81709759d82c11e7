#pragma once
// A clean Hugging Face environment for one hf:// test: none of the machine's HF_* settings, its
// token or its cache, and a Hub fixture with one repository; everything restored afterwards.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "support/files.hpp"
#include "support/hub_fixture_server.hpp"
#include "support/isolated_environment_test.hpp"
#include "support/sha256.hpp"

namespace tensorstream::hf::testing {

/// Clears every variable HfStore reads, points HOME at a fresh directory, and HF_ENDPOINT at the
/// test's Hub fixture.
class HfEnvironmentTest : public tensorstream::testing::IsolatedEnvironmentTest {
 protected:
  explicit HfEnvironmentTest(tensorstream::testing::HubFixtureServer::Options options = {})
      : IsolatedEnvironmentTest({"HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                 "HF_TOKEN_PATH", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE",
                                 "XDG_CACHE_HOME"}),
        hub_(std::move(options)) {
    set("HF_ENDPOINT", hub_.endpoint());
  }

  /// The Hub's requests whose path starts with `prefix` ("/api/models/", "/ORG/NAME/resolve/").
  std::vector<tensorstream::testing::HubFixtureServer::Request> hub_requests(
      const std::string& prefix) const {
    std::vector<tensorstream::testing::HubFixtureServer::Request> matching;
    for (auto& request : hub_.hub_requests()) {
      if (request.target.starts_with(prefix)) matching.push_back(request);
    }
    return matching;
  }

  /// Lays `files` of `repo` at `commit` out in the cache at `cache` as huggingface_hub does:
  /// blobs named by their content, snapshot files linking to them, and refs/main.
  static void write_hf_cache(const std::filesystem::path& cache, const std::string& repo,
                             const std::string& commit,
                             const std::map<std::string, std::string>& files) {
    std::string folder = "models--" + repo;
    folder.replace(folder.find('/'), 1, "--");
    const auto root = cache / folder;
    for (const auto& [path, bytes] : files) {
      const std::string blob = tensorstream::testing::sha256_hex(
          std::as_bytes(std::span(bytes.data(), bytes.size())));
      tensorstream::testing::write_file(root / "blobs" / blob, bytes);
      const auto link = root / "snapshots" / commit / path;
      std::filesystem::create_directories(link.parent_path());
      std::filesystem::create_symlink(
          std::filesystem::relative(root / "blobs" / blob, link.parent_path()), link);
    }
    tensorstream::testing::write_file(root / "refs" / "main", commit);
  }

  tensorstream::testing::HubFixtureServer hub_;
};

}  // namespace tensorstream::hf::testing
