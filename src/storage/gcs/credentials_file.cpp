#include "storage/gcs/credentials_file.hpp"

#include <simdjson.h>

#include <string>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::gcs {
namespace {

// Reads the string fields of one credentials object.
class Fields {
 public:
  explicit Fields(simdjson::dom::object object) : object_(object) {}

  std::string required(const char* name) const {
    std::string_view value;
    const auto error = object_[name].get(value);
    if (error == simdjson::NO_SUCH_FIELD) throw InvalidArgument(std::string("no \"") + name + "\"");
    if (error) throw InvalidArgument(std::string(name) + ": " + simdjson::error_message(error));
    if (value.empty()) throw InvalidArgument(std::string("\"") + name + "\" is empty");
    return std::string(value);
  }

  void optional(const char* name, std::string& value) const {
    if (object_[name].error() == simdjson::NO_SUCH_FIELD) return;
    value = required(name);
  }

 private:
  simdjson::dom::object object_;
};

}  // namespace

FileCredentials parse_credentials_file(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::object object;
  if (const auto error = parser.parse(padded).get(object)) {
    throw InvalidArgument(std::string("not a JSON object: ") + simdjson::error_message(error));
  }
  const Fields fields(object);
  const std::string type = fields.required("type");
  if (type == "service_account") {
    ServiceAccountKey key;
    key.client_email = fields.required("client_email");
    key.private_key = fields.required("private_key");
    fields.optional("private_key_id", key.private_key_id);
    fields.optional("token_uri", key.token_uri);
    return key;
  }
  if (type == "authorized_user") {
    AuthorizedUser user;
    user.client_id = fields.required("client_id");
    user.client_secret = fields.required("client_secret");
    user.refresh_token = fields.required("refresh_token");
    fields.optional("token_uri", user.token_uri);
    return user;
  }
  throw InvalidArgument("credentials of type " + json_string(type) +
                        " are not supported (use a service_account key or gcloud's "
                        "authorized_user credentials)");
}

}  // namespace tensorstream::gcs
