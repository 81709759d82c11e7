#pragma once
// A stand-in for the Hugging Face Hub, since none can be reached from the tests: the parts of
// its HTTP API that huggingface_hub and HfStore use, and a CDN on a second origin that the Hub's
// downloads redirect to, as huggingface.co redirects to its CDN with signed URLs.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// Two HTTP/1.1 servers on ephemeral 127.0.0.1 ports, each on a thread of its own, sharing
/// in-memory model repositories.
///
/// The Hub (endpoint()) serves:
/// - `GET /api/models/ORG/NAME/revision/REV`: {"id", "sha", "siblings"} of the commit a branch
///   (or a commit) names.
/// - `GET /api/models/ORG/NAME/tree/REV[/PATH]?recursive=true`: the commit's files and folders,
///   `page_size` per page, the next page in a `Link: <URL>; rel="next"` header, files with
///   "size", "oid" and, for LFS files, "lfs": {"oid": SHA-256, "size"}.
/// - `GET /ORG/NAME/resolve/REV/PATH`: a small file itself (200, or 206 for a Range); an LFS
///   file (larger than `lfs_threshold`) as a 302 to the CDN with a signed URL, and the headers
///   X-Repo-Commit, X-Linked-Etag and X-Linked-Size.
/// Errors carry X-Error-Code and X-Error-Message as the Hub's do: RepoNotFound (401),
/// RevisionNotFound and EntryNotFound (404), GatedRepo (403) for a gated repository asked
/// without the token, and 401 "Invalid credentials in Authorization header" for an unknown
/// token.
///
/// The CDN (cdn_endpoint()) serves `GET /repos/BLOB?Expires=..&Key-Pair-Id=N&Signature=..`, the
/// URLs the Hub issues: ranges of the blob with its SHA-256 as ETag, for a valid signature only
/// (403 otherwise). A request that carries an Authorization header is answered 400 and counted
/// in leaked_tokens(): the Hub's token must never reach the CDN.
class HubFixtureServer {
 public:
  /// Faults and sizes.
  struct Options {
    /// Files and folders per tree page; small, so that pages are followed.
    std::size_t page_size = 2;
    /// The token that reads gated repositories; another token is refused.
    std::string token = "hf_fixture_token_0123456789";
    /// Files larger than this go to the CDN.
    std::uint64_t lfs_threshold = 1024;
    /// Each signed CDN URL answers this many requests, then 403 "Request has expired", as a
    /// URL past its Expires does; 0: unlimited.
    int cdn_url_uses = 0;
    /// Answer the first K Hub requests with 429 and `Retry-After: retry_after_seconds`.
    int throttle_first = 0;
    int retry_after_seconds = 1;
    /// Answer the Hub's errors with their status and a plain body, without X-Error-Code,
    /// X-Error-Message or JSON, as a mirror in HF_ENDPOINT may.
    bool bare_errors = false;
  };

  /// One request as received.
  struct Request {
    std::string method;
    std::string target;
    std::string authorization;  ///< Empty when absent.
    std::string range;          ///< Empty when absent.
    std::chrono::steady_clock::time_point received;
  };

  /// What a server answers (defined with the server).
  struct Reply;

  explicit HubFixtureServer(Options options);
  ~HubFixtureServer();

  HubFixtureServer(const HubFixtureServer&) = delete;
  HubFixtureServer& operator=(const HubFixtureServer&) = delete;

  /// Commits `files` (path in the repository → bytes) as the whole content of `repo` ("ORG/NAME")
  /// on `branch`, creating both; returns the new commit's 40 hex digits.
  std::string commit(const std::string& repo, const std::map<std::string, std::string>& files,
                     const std::string& branch = "main");

  /// commit() of every regular file under `directory`, by its path relative to it.
  std::string commit_directory(const std::string& repo, const std::filesystem::path& directory,
                               const std::string& branch = "main");

  /// Makes `repo` readable only with Options::token.
  void make_gated(const std::string& repo);

  /// A signed CDN URL of `path` of `repo` at `revision`, as the Hub's redirect gives it.
  std::string cdn_url(const std::string& repo, const std::string& revision,
                      const std::string& path);

  /// "http://127.0.0.1:PORT" of the Hub.
  std::string endpoint() const;
  /// "http://127.0.0.1:PORT" of the CDN.
  std::string cdn_endpoint() const;

  /// The requests each server received so far, in order.
  std::vector<Request> hub_requests() const;
  std::vector<Request> cdn_requests() const;

  /// Requests that reached the CDN with an Authorization header.
  int leaked_tokens() const;

 private:
  struct File {
    std::shared_ptr<const std::string> bytes;
    std::string sha256;
    std::string oid;
  };
  using Tree = std::map<std::string, File>;  // By path.
  struct Repo {
    std::map<std::string, std::string> branches;  // Name → commit.
    std::map<std::string, Tree> commits;
    bool gated = false;
  };
  struct Signed {
    std::shared_ptr<const std::string> bytes;
    std::string sha256;
    int uses = 0;
  };

  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket, bool cdn);
  Reply hub(const Request& request);
  Reply cdn(const Request& request);
  Reply resolve(const std::string& repo, const std::string& commit, const std::string& path,
                const Request& request);
  Reply tree(const std::string& repo, const std::string& commit, const std::string& path,
             std::string_view query, const std::string& target);
  std::string sign_locked(const File& file);
  // The commit `revision` names in `repo`; empty when none.
  std::string commit_of(const Repo& repo, const std::string& revision) const;

  const Options options_;
  mutable std::mutex mutex_;
  std::map<std::string, Repo> repos_;
  std::map<std::string, Signed> signed_;  // By Key-Pair-Id.
  int commits_ = 0;
  int hub_requests_seen_ = 0;
  int leaked_tokens_ = 0;
  std::vector<Request> hub_log_;
  std::vector<Request> cdn_log_;
  LoopbackListener hub_listener_;
  LoopbackListener cdn_listener_;
};

}  // namespace tensorstream::testing
