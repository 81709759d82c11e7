#pragma once
// The settings a deployment gives through the environment, as the Python original reads them:
// `TENSORSTREAM_<NAME>`, else `FLYTE_MODEL_LOADER_<NAME>`. Shared by the streamers (chunk size,
// concurrency) and ModelLoaderConfig (everything else), which sit in different layers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::detail {

/// One setting as a variable gave it.
struct EnvironmentSetting {
  std::string variable;  ///< The variable that gave the value, for messages.
  std::string value;
};

/// TENSORSTREAM_<name>, else FLYTE_MODEL_LOADER_<name>; nullopt when neither is set. Empty values
/// count as unset, so that `VAR=` in a container spec does not hide the other variable.
std::optional<EnvironmentSetting> environment_setting(std::string_view name);

/// The setting as a positive decimal integer; InvalidArgument naming the variable and its value
/// otherwise, or when it does not fit.
std::size_t positive_size(const EnvironmentSetting& setting);

/// The setting as a size above zero in the syntax of the tool's flags (`16MiB`, `100KB`, `4096`:
/// parse_byte_size()); InvalidArgument naming the variable and its value otherwise.
std::uint64_t positive_byte_size(const EnvironmentSetting& setting);

/// The setting as a positive number of seconds, e.g. "10" or "2.5", rounded to milliseconds (at
/// least one); InvalidArgument naming the variable and its value otherwise.
std::chrono::milliseconds positive_seconds(const EnvironmentSetting& setting);

/// Whether the value is "true" in any case, as the Python original tests booleans.
bool is_true(std::string_view text);

}  // namespace tensorstream::detail
