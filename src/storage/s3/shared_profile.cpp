#include "storage/s3/shared_profile.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "storage/environment.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

std::string file_path(const char* variable, const char* default_name) {
  std::string path = environment(variable);
  if (!path.empty()) return path;
  const std::string home = environment("HOME");
  return home.empty() ? std::string() : home + "/.aws/" + default_name;
}

IniSections read_ini(const std::string& path) {
  std::error_code error;
  if (path.empty() || !std::filesystem::exists(path, error)) return {};
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  return parse_ini(text.str(), path);
}

void merge(SharedProfile& profile, const IniSections& sections, const std::string& section) {
  const auto found = sections.find(section);
  if (found == sections.end()) return;
  profile.found = true;
  for (const auto& [key, value] : found->second) profile.settings[key] = value;
}

}  // namespace

SharedProfile load_shared_profile() {
  SharedProfile profile;
  profile.name = environment("AWS_PROFILE");
  profile.explicitly_named = !profile.name.empty();
  if (profile.name.empty()) profile.name = "default";

  const std::string credentials_path = file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
  const std::string config_path = file_path("AWS_CONFIG_FILE", "config");
  profile.files = credentials_path + " and " + config_path;

  // Config first, so that the credentials file overrides it.
  const IniSections config = read_ini(config_path);
  merge(profile, config, profile.name == "default" ? "default" : "profile " + profile.name);
  merge(profile, read_ini(credentials_path), profile.name);
  return profile;
}

}  // namespace tensorstream::s3
