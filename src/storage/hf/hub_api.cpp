#include "storage/hf/hub_api.hpp"

#include <simdjson.h>

#include <algorithm>

#include "base/ascii.hpp"
#include "storage/relative_key.hpp"
#include "storage/s3/sigv4.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::hf {
namespace {

FormatError malformed(const std::string& url, std::string_view what, std::string_view why) {
  return FormatError(url + ": malformed " + std::string(what) + " from the Hub: " +
                     std::string(why));
}

// "ORG/NAME" with each part percent-encoded and the slash kept.
std::string encode_repo(std::string_view repo) { return s3::uri_encode(repo, true); }

}  // namespace

bool is_commit(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string revision_target(std::string_view prefix, std::string_view repo,
                            std::string_view revision) {
  return std::string(prefix) + "/api/models/" + encode_repo(repo) + "/revision/" +
         s3::uri_encode(revision, false);
}

std::string tree_target(std::string_view prefix, std::string_view repo, std::string_view commit) {
  return std::string(prefix) + "/api/models/" + encode_repo(repo) + "/tree/" +
         std::string(commit) + "?recursive=true&expand=false";
}

std::string resolve_target(std::string_view prefix, std::string_view repo,
                           std::string_view commit, std::string_view path) {
  return std::string(prefix) + "/" + encode_repo(repo) + "/resolve/" + std::string(commit) + "/" +
         s3::uri_encode(path, true);
}

std::string parse_commit(std::string_view body, const std::string& url) {
  constexpr std::string_view what = "revision";
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::object document;
  if (const auto error = parser.parse(padded).get(document)) {
    throw malformed(url, what, simdjson::error_message(error));
  }
  std::string_view sha;
  if (const auto error = document["sha"].get(sha)) {
    throw malformed(url, what, std::string("sha: ") + simdjson::error_message(error));
  }
  if (!is_commit(sha)) {
    throw malformed(url, what, "sha \"" + std::string(sha) + "\" is no commit");
  }
  return std::string(sha);
}

std::vector<HfFile> parse_tree_page(std::string_view body, const std::string& url) {
  constexpr std::string_view what = "tree listing";
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::array entries;
  if (const auto error = parser.parse(padded).get(entries)) {
    throw malformed(url, what, simdjson::error_message(error));
  }
  std::vector<HfFile> files;
  for (const auto entry : entries) {
    std::string_view type;
    std::string_view path;
    if (const auto error = entry["type"].get(type)) {
      throw malformed(url, what, std::string("type: ") + simdjson::error_message(error));
    }
    if (const auto error = entry["path"].get(path)) {
      throw malformed(url, what, std::string("path: ") + simdjson::error_message(error));
    }
    if (type != "file") continue;
    // The paths become paths in the local cache: none may lead out of its snapshot.
    if (!detail::is_relative_key_inside(path)) {
      throw malformed(url, what, "path \"" + std::string(path) + "\" names no file in it");
    }
    HfFile file{std::string(path), 0, {}};
    if (const auto error = entry["size"].get(file.size)) {
      throw malformed(url, what, std::string("size of ") + std::string(path) + ": " +
                                     simdjson::error_message(error));
    }
    std::string_view blob;
    simdjson::dom::object lfs;
    const auto lfs_error = entry["lfs"].get(lfs);
    if (lfs_error && lfs_error != simdjson::NO_SUCH_FIELD) {
      throw malformed(url, what, std::string("lfs: ") + simdjson::error_message(lfs_error));
    }
    const auto blob_error = lfs_error ? entry["oid"].get(blob) : lfs["oid"].get(blob);
    if (blob_error) {
      throw malformed(url, what, std::string("oid of ") + std::string(path) + ": " +
                                     simdjson::error_message(blob_error));
    }
    // The blob names a file of the local cache (blobs/BLOB): a git object id (40 hex digits)
    // or an LFS SHA-256 (64), nothing else.
    const auto hex = [](std::string_view text, std::size_t digits) {
      return text.size() == digits && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
             });
    };
    if (!(lfs_error ? hex(blob, 40) : hex(blob, 64))) {
      throw malformed(url, what, "oid of " + std::string(path) + " \"" + std::string(blob) +
                                     "\" is no " + (lfs_error ? "git object id" : "SHA-256"));
    }
    file.blob = std::string(blob);
    files.push_back(std::move(file));
  }
  return files;
}

std::optional<std::string> next_page_target(std::string_view link, std::string_view origin,
                                            const std::string& url) {
  while (!link.empty()) {
    const auto open = link.find('<');
    const auto close = link.find('>', open);
    if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
    const std::string_view target = link.substr(open + 1, close - open - 1);
    const auto next = link.find('<', close);
    const std::string params = ascii_lowercase(link.substr(close + 1, next - close - 1));
    link = next == std::string_view::npos ? std::string_view{} : link.substr(next);
    if (params.find("rel=\"next\"") == std::string::npos &&
        params.find("rel=next") == std::string::npos) {
      continue;
    }
    if (target.starts_with("/")) return std::string(target);
    if (target.starts_with(origin) && target.substr(origin.size()).starts_with("/")) {
      return std::string(target.substr(origin.size()));
    }
    throw malformed(url, "tree listing",
                    "the next page is on another server: " + std::string(target));
  }
  return std::nullopt;
}

}  // namespace tensorstream::hf
