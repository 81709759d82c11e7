#pragma once
// One profile of the AWS shared credentials and config files.

#include <string>

#include "storage/s3/ini_file.hpp"

namespace tensorstream::s3 {

/// A profile's settings from ~/.aws/credentials (section [NAME]) and ~/.aws/config (section
/// [profile NAME], or [default]); the credentials file wins where both set a key, as in the
/// AWS CLI.
struct SharedProfile {
  std::string name;               ///< e.g. "default".
  bool explicitly_named = false;  ///< Chosen by AWS_PROFILE rather than by default.
  bool found = false;             ///< Some file has a section for it.
  IniSection settings;            ///< Merged settings.
  std::string files;              ///< The files looked at, for messages.
};

/// Loads the profile named by AWS_PROFILE (else "default") from AWS_SHARED_CREDENTIALS_FILE
/// (else ~/.aws/credentials) and AWS_CONFIG_FILE (else ~/.aws/config). A missing file counts
/// as empty; an unreadable or malformed one throws InvalidArgument naming it.
SharedProfile load_shared_profile();

}  // namespace tensorstream::s3
