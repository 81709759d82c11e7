#include "storage/hf/repo_path.hpp"

#include <algorithm>

#include "storage/percent_decode.hpp"
#include "storage/relative_key.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::hf {

bool is_hub_name(std::string_view name) {
  if (name.empty() || name.size() > 96) return false;
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.';
  };
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  // "--" joins organisation and name in the cache's folder names (models--ORG--NAME).
  return std::all_of(name.begin(), name.end(), allowed) && !edge(name.front()) &&
         !edge(name.back()) && name.find("..") == std::string_view::npos &&
         name.find("--") == std::string_view::npos;
}

RepoPath parse_repo_path(std::string_view org, std::string_view key, const std::string& url) {
  if (key.size() < 2 || key.front() != '/') {
    throw InvalidArgument(url + ": name a repository, as hf://ORG/NAME[@REVISION][/PATH]");
  }
  const std::string_view rest = key.substr(1);
  const auto slash = rest.find('/');
  RepoPath parsed;
  parsed.repo_key = "/" + std::string(rest.substr(0, slash));
  const std::string_view first = rest.substr(0, slash);
  const auto at = first.find('@');
  const std::string_view name = first.substr(0, at);
  if (!is_hub_name(name)) {
    throw InvalidArgument(url + ": '" + std::string(name) +
                          "' is no repository name (letters, digits, '-', '_' and '.')");
  }
  parsed.repo = std::string(org) + "/" + std::string(name);
  parsed.revision = "main";
  if (at != std::string_view::npos) {
    parsed.revision = percent_decode(first.substr(at + 1));
    const bool printable = std::all_of(parsed.revision.begin(), parsed.revision.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u > 0x20 && u != 0x7f;
    });
    // Git allows no ".." in a ref, and the revision names a file under the cache's refs/.
    if (!printable || !detail::is_relative_key_inside(parsed.revision)) {
      throw InvalidArgument(url + ": the revision after '@' must be a branch, tag or commit");
    }
  }
  if (slash != std::string_view::npos) parsed.path = std::string(rest.substr(slash + 1));
  return parsed;
}

}  // namespace tensorstream::hf
