#pragma once
// Where the Hub is, who asks it, and where its local cache lies: HfOptions completed from the
// environment as huggingface_hub completes its settings.

#include <filesystem>
#include <optional>
#include <string>

#include "tensorstream/storage/hf_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::hf {

/// HfOptions with every setting decided.
struct HubSettings {
  Url origin;               ///< "scheme://host[:port]" of the endpoint.
  std::string path_prefix;  ///< The endpoint's path without a trailing '/', often empty.
  /// The access token, or nullopt to send none.
  std::optional<std::string> token;
  /// Where the token came from, for messages: "HF_TOKEN", "the token file PATH", ...; without
  /// a token, why: "anonymous", "none in HF_TOKEN, HUGGING_FACE_HUB_TOKEN or PATH". Never the
  /// token itself.
  std::string token_source;
  bool offline = false;
  std::filesystem::path cache_dir;
  bool read_cache = true;

  /// The endpoint as configured: origin and path prefix.
  std::string endpoint() const { return origin.origin() + path_prefix; }
};

/// Decides every setting of `options` left open from HF_ENDPOINT, HF_TOKEN,
/// HUGGING_FACE_HUB_TOKEN, HF_TOKEN_PATH, HF_HOME, XDG_CACHE_HOME, HOME, HF_HUB_CACHE and
/// HF_HUB_OFFLINE. Throws InvalidArgument naming the setting for an endpoint that is no http(s)
/// URL, an HF_HUB_OFFLINE that is no boolean, a token with spaces or control characters (never
/// quoting it), or offline without a cache to read.
HubSettings resolve_hub_settings(const HfOptions& options);

}  // namespace tensorstream::hf
