#include "storage/azure/connection_string.hpp"

#include "base/ascii.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::azure {
ConnectionString parse_connection_string(std::string_view text, const std::string& source) {
  ConnectionString parsed;
  std::string protocol = "https";
  std::string suffix = "core.windows.net";
  bool development = false;
  std::size_t index = 0;
  while (!text.empty()) {
    const auto semicolon = text.find(';');
    const std::string_view pair = ascii_trim(text.substr(0, semicolon));
    text = semicolon == std::string_view::npos ? std::string_view{} : text.substr(semicolon + 1);
    ++index;
    if (pair.empty()) continue;
    const auto equals = pair.find('=');
    if (equals == std::string_view::npos) {
      throw InvalidArgument(source + ": part " + std::to_string(index) +
                            " of the connection string is no Name=value pair");
    }
    const std::string name = ascii_lowercase(ascii_trim(pair.substr(0, equals)));
    const std::string value(ascii_trim(pair.substr(equals + 1)));
    if (name == "accountname") {
      parsed.account = value;
    } else if (name == "accountkey") {
      parsed.account_key = value;
    } else if (name == "sharedaccesssignature") {
      parsed.sas = value.starts_with('?') ? value.substr(1) : value;
    } else if (name == "blobendpoint") {
      parsed.blob_endpoint = value;
    } else if (name == "defaultendpointsprotocol") {
      protocol = value;
    } else if (name == "endpointsuffix") {
      suffix = value;
    } else if (name == "usedevelopmentstorage") {
      development = ascii_lowercase(value) == "true";
    }
  }
  if (development) {
    if (parsed.account.empty()) parsed.account = emulator_account;
    if (parsed.account_key.empty() && parsed.sas.empty()) parsed.account_key = emulator_key;
    if (parsed.blob_endpoint.empty()) {
      parsed.blob_endpoint = "http://127.0.0.1:10000/" + parsed.account;
    }
  }
  if (parsed.blob_endpoint.empty() && !parsed.account.empty()) {
    parsed.blob_endpoint = protocol + "://" + parsed.account + ".blob." + suffix;
  }
  if (parsed.blob_endpoint.empty()) {
    throw InvalidArgument(source + ": the connection string names neither AccountName nor "
                          "BlobEndpoint");
  }
  return parsed;
}

}  // namespace tensorstream::azure
