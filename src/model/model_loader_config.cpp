#include "tensorstream/model/model_loader_config.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

// One setting as its two variables name it.
struct Variable {
  std::string name;   // The variable that gave the value, for messages.
  std::string value;
};

// TENSORSTREAM_<setting>, else FLYTE_MODEL_LOADER_<setting>; nullopt when neither is set. Empty
// values count as unset, so that `VAR=` in a container spec does not hide the other variable.
std::optional<Variable> lookup(std::string_view setting) {
  for (const std::string_view prefix : {"TENSORSTREAM_", "FLYTE_MODEL_LOADER_"}) {
    std::string name(prefix);
    name += setting;
    const char* value = std::getenv(name.c_str());
    if (value != nullptr && *value != '\0') return Variable{std::move(name), value};
  }
  return std::nullopt;
}

template <class Number>
Number positive_number(const Variable& variable) {
  const std::string_view text = variable.value;
  Number number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc::result_out_of_range) {
    throw InvalidArgument(variable.name + "='" + variable.value + "' is too large (at most " +
                          std::to_string(std::numeric_limits<Number>::max()) + ")");
  }
  if (ec != std::errc{} || end != text.data() + text.size() || number == 0) {
    throw InvalidArgument(variable.name + "='" + variable.value +
                          "' is not a positive decimal integer");
  }
  return number;
}

bool is_true(std::string_view text) {
  constexpr std::string_view word = "true";
  if (text.size() != word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != word[i]) return false;
  }
  return true;
}

}  // namespace

ModelLoaderConfig ModelLoaderConfig::from_environment() {
  ModelLoaderConfig config;
  if (auto variable = lookup("REMOTE_MODEL_PATH")) config.remote_model_path = variable->value;
  if (auto variable = lookup("LOCAL_MODEL_PATH")) {
    config.local_model_path = variable->value;
    config.local_model_path_set = true;
  }
  if (auto variable = lookup("CHUNK_SIZE")) {
    config.chunk_size = positive_number<std::uint64_t>(*variable);
  }
  if (auto variable = lookup("MAX_CONCURRENCY")) {
    config.max_concurrency = positive_number<std::size_t>(*variable);
  }
  if (auto variable = lookup("STREAM_SAFETENSORS")) {
    config.stream_safetensors = is_true(variable->value);
  }
  return config;
}

const std::string& ModelLoaderConfig::required_remote_model_path() const {
  if (!remote_model_path) {
    throw InvalidArgument(
        "no remote model path was given, and neither TENSORSTREAM_REMOTE_MODEL_PATH nor "
        "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH is set");
  }
  return *remote_model_path;
}

const std::string& ModelLoaderConfig::required_local_model_path() const {
  if (!local_model_path_set) {
    throw InvalidArgument(
        "no local directory was given, and neither TENSORSTREAM_LOCAL_MODEL_PATH nor "
        "FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH is set");
  }
  return local_model_path;
}

StreamerOptions ModelLoaderConfig::streamer_options(StreamerOptions explicit_options) const {
  if (!explicit_options.chunk_size) explicit_options.chunk_size = chunk_size;
  if (!explicit_options.max_concurrency) explicit_options.max_concurrency = max_concurrency;
  return explicit_options;
}

}  // namespace tensorstream
