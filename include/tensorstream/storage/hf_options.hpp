#pragma once
/// @file
/// Options of the hf:// backend: the Hub's endpoint, the token and the local cache.

#include <optional>
#include <string>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// Options of HfStore. Fields left empty are resolved as `huggingface_hub` resolves them.
struct TENSORSTREAM_API HfOptions {
  /// The Hub, e.g. "http://127.0.0.1:8080" for a mirror; empty: HF_ENDPOINT, else
  /// https://huggingface.co.
  std::string endpoint{};
  /// The access token; unset: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the token file
  /// (HF_TOKEN_PATH, else HF_HOME/token, HF_HOME defaulting to XDG_CACHE_HOME/huggingface, else
  /// ~/.cache/huggingface). Sent to the Hub only, never to the servers its downloads redirect
  /// to, and never logged; one with spaces or control characters is refused.
  std::optional<std::string> token{};
  /// Send no token, for public repositories (the CLI's --no-sign-request).
  bool anonymous = false;
  /// Read the local cache only and send no request (HF_HUB_OFFLINE=1); unset: HF_HUB_OFFLINE.
  std::optional<bool> offline{};
  /// The Hugging Face cache ("models--ORG--NAME/snapshots/COMMIT/PATH"), whose files of the
  /// pinned commit are read from there; empty: HF_HUB_CACHE, else HF_HOME/hub (HF_HOME as for
  /// the token).
  std::string cache_dir{};
  /// false: every file comes from the Hub, whatever the cache holds (not with `offline`).
  bool read_cache = true;
};

}  // namespace tensorstream
