#pragma once
// The requests of the Hub's HTTP API that HfStore sends, and the documents it gets back.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/storage/hf_store.hpp"

namespace tensorstream::hf {

/// `/api/models/REPO/revision/REVISION` under `prefix`: the revision's commit ("sha").
std::string revision_target(std::string_view prefix, std::string_view repo,
                            std::string_view revision);

/// `/api/models/REPO/tree/COMMIT?recursive=true&expand=false` under `prefix`: the first page of
/// the commit's files and folders.
std::string tree_target(std::string_view prefix, std::string_view repo, std::string_view commit);

/// `/REPO/resolve/COMMIT/PATH` under `prefix`: the file's bytes, or a redirect to them.
std::string resolve_target(std::string_view prefix, std::string_view repo,
                           std::string_view commit, std::string_view path);

/// The commit of a revision document ({"sha": "40 hex digits", ...}). Throws FormatError naming
/// `url` when it has none.
std::string parse_commit(std::string_view body, const std::string& url);

/// The files of one page of a tree listing (a JSON array of {"type", "path", "size", "oid",
/// "lfs": {"oid", "size"}}), folders left out. Throws FormatError naming `url` when malformed.
std::vector<HfFile> parse_tree_page(std::string_view body, const std::string& url);

/// The target of the next page that a Link header (RFC 8288) names with rel="next", when it is
/// on `origin` ("scheme://host[:port]"); nullopt on the last page. Throws FormatError naming
/// `url` for a next page on another server.
std::optional<std::string> next_page_target(std::string_view link, std::string_view origin,
                                            const std::string& url);

/// Whether `text` is a commit as the Hub writes them: 40 lowercase hex digits.
bool is_commit(std::string_view text);

}  // namespace tensorstream::hf
