#include "storage/s3/sts_response.hpp"

#include <pugixml.hpp>

#include "storage/s3/iso8601.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

Credentials parse_web_identity_response(std::string_view xml, const std::string& url,
                                        const std::string& provider) {
  const auto fail = [&](const std::string& what) {
    throw CredentialsError("AWS",
        provider, "malformed AssumeRoleWithWebIdentity response from " + url + ": " + what, true);
  };
  pugi::xml_document document;
  if (const auto result = document.load_buffer(xml.data(), xml.size()); !result) {
    fail(result.description());
  }
  const pugi::xml_node fields = document.child("AssumeRoleWithWebIdentityResponse")
                                    .child("AssumeRoleWithWebIdentityResult")
                                    .child("Credentials");
  if (!fields) fail("no Credentials element");
  const auto text = [&](const char* name) {
    std::string value = fields.child_value(name);
    if (value.empty()) fail(std::string(name) + " is missing or empty");
    return value;
  };

  Credentials credentials{text("AccessKeyId"), text("SecretAccessKey"), text("SessionToken"),
                          parse_iso8601(fields.child_value("Expiration"))};
  if (!credentials.expiration) fail("Expiration is not ISO 8601 UTC");
  return credentials;
}

std::string sts_error(std::string_view xml) {
  pugi::xml_document document;
  if (!document.load_buffer(xml.data(), xml.size())) return {};
  const pugi::xml_node error = document.child("ErrorResponse").child("Error");
  std::string text = error.child_value("Code");
  if (text.empty()) return {};
  if (const std::string message = error.child_value("Message"); !message.empty()) {
    text += ": " + message;
  }
  return text;
}

}  // namespace tensorstream::s3
