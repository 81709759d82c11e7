#pragma once
// The JSON credentials files of Google Cloud: service account keys and gcloud's user
// credentials.

#include <string_view>
#include <variant>

#include "storage/gcs/authorized_user_provider.hpp"
#include "storage/gcs/service_account_provider.hpp"

namespace tensorstream::gcs {

/// What a credentials file holds, by its "type".
using FileCredentials = std::variant<ServiceAccountKey, AuthorizedUser>;

/// Parses a credentials file's text. "token_uri" is optional (Google's endpoint by default); the
/// other fields each type needs are required. Throws InvalidArgument saying what is wrong: not a
/// JSON object, no "type", an unsupported type, a missing or empty field.
FileCredentials parse_credentials_file(std::string_view json);

}  // namespace tensorstream::gcs
