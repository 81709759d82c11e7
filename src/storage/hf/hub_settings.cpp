#include "storage/hf/hub_settings.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "base/ascii.hpp"
#include "storage/environment.hpp"
#include "storage/service_endpoint.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::hf {
namespace {

constexpr std::string_view hub_endpoint = "https://huggingface.co";

// HF_HOME, else XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface; empty without a HOME.
std::filesystem::path hf_home() {
  if (const std::string home = environment("HF_HOME"); !home.empty()) return home;
  if (const std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) {
    return std::filesystem::path(xdg) / "huggingface";
  }
  if (const std::string home = environment("HOME"); !home.empty()) {
    return std::filesystem::path(home) / ".cache" / "huggingface";
  }
  return {};
}

// huggingface_hub's truthy and falsy spellings.
bool offline_setting(const std::string& value) {
  const std::string lower = ascii_lowercase(ascii_trim(value));
  if (lower == "1" || lower == "on" || lower == "yes" || lower == "true") return true;
  if (lower.empty() || lower == "0" || lower == "off" || lower == "no" || lower == "false") {
    return false;
  }
  throw InvalidArgument("HF_HUB_OFFLINE=" + value + ": neither 1 nor 0 (true/false, yes/no, on/off)");
}

void decide_token(const HfOptions& options, HubSettings& settings) {
  if (options.anonymous) {
    settings.token_source = "anonymous";
    return;
  }
  if (options.token) {
    if (!options.token->empty()) settings.token = *options.token;
    settings.token_source = options.token->empty() ? "HfOptions::token is empty" : "HfOptions::token";
    return;
  }
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (std::string token{ascii_trim(environment(name))}; !token.empty()) {
      settings.token = std::move(token);
      settings.token_source = name;
      return;
    }
  }
  std::filesystem::path file = environment("HF_TOKEN_PATH");
  if (file.empty() && !hf_home().empty()) file = hf_home() / "token";
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (std::string token{ascii_trim(text)}; in && !token.empty()) {
      settings.token = std::move(token);
      settings.token_source = "the token file " + file.string();
      return;
    }
  }
  settings.token_source = "none in HF_TOKEN, HUGGING_FACE_HUB_TOKEN or " +
                          (file.empty() ? std::string("a token file") : file.string());
}

// A token goes on a header line as it is: a line break in it would end the header there.
void check_token(const HubSettings& settings) {
  if (!settings.token) return;
  const bool printable = std::all_of(settings.token->begin(), settings.token->end(), [](char c) {
    return c > 0x20 && c < 0x7f;
  });
  if (!printable) {
    throw InvalidArgument("the Hugging Face token from " + settings.token_source +
                          " holds spaces or control characters; a token is one word");
  }
}

}  // namespace

HubSettings resolve_hub_settings(const HfOptions& options) {
  HubSettings settings;
  std::string endpoint = options.endpoint;
  std::string source = "HfOptions::endpoint";
  if (endpoint.empty()) {
    endpoint = environment("HF_ENDPOINT");
    source = "HF_ENDPOINT";
  }
  if (endpoint.empty()) endpoint = hub_endpoint;
  ServiceEndpoint parsed = parse_service_endpoint(endpoint, source, "the Hub's endpoint");
  settings.origin = std::move(parsed.origin);
  settings.path_prefix = std::move(parsed.path_prefix);
  decide_token(options, settings);
  check_token(settings);
  settings.offline =
      options.offline ? *options.offline : offline_setting(environment("HF_HUB_OFFLINE"));
  settings.read_cache = options.read_cache;
  if (!options.cache_dir.empty()) {
    settings.cache_dir = options.cache_dir;
  } else if (const std::string cache = environment("HF_HUB_CACHE"); !cache.empty()) {
    settings.cache_dir = cache;
  } else if (!hf_home().empty()) {
    settings.cache_dir = hf_home() / "hub";
  }
  if (settings.offline && (!settings.read_cache || settings.cache_dir.empty())) {
    throw InvalidArgument(settings.read_cache
                              ? "HF_HUB_OFFLINE reads the Hugging Face cache, which is nowhere: "
                                "set HF_HUB_CACHE, HF_HOME or HOME"
                              : "HF_HUB_OFFLINE reads only the Hugging Face cache, which "
                                "HfOptions::read_cache = false forbids");
  }
  return settings;
}

}  // namespace tensorstream::hf
