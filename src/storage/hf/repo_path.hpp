#pragma once
// What an hf:// key names: a repository of the URL's organisation, a revision of it and a path
// in it, as huggingface_hub's file system spells them ("/NAME@REVISION/PATH").

#include <string>
#include <string_view>

namespace tensorstream::hf {

/// The parts of an HfStore key.
struct RepoPath {
  std::string repo;      ///< "ORG/NAME".
  std::string revision;  ///< Branch, tag or commit, percent-decoded; "main" when unnamed.
  /// The path in the repository, without a leading '/': "TP2/shard0/weights.traw", a prefix
  /// ending in '/', or empty for the whole repository.
  std::string path;
  /// The key's first segment as written, "/NAME" or "/NAME@REVISION": the keys of the files
  /// of the same snapshot start with it.
  std::string repo_key;
};

/// The repository, revision and path `key` ("/NAME[@REVISION][/PATH]") names in organisation
/// `org`; `url` is the key's URL for messages. A revision with '/' in it is percent-encoded
/// ("@refs%2Fpr%2F1"). Throws InvalidArgument for a key without a repository name, names with
/// characters the Hub does not allow, or an empty revision.
RepoPath parse_repo_path(std::string_view org, std::string_view key, const std::string& url);

/// Whether `name` is a repository or organisation name the Hub accepts: letters, digits, '-',
/// '_' and '.', at most 96 characters, neither starting nor ending with '-' or '.', and with
/// neither "--" nor ".." in it.
bool is_hub_name(std::string_view name);

}  // namespace tensorstream::hf
