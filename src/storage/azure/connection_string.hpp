#pragma once
// Azure Storage connection strings ("AccountName=...;AccountKey=...;BlobEndpoint=..."), as the
// portal shows them and AZURE_STORAGE_CONNECTION_STRING holds them.

#include <string>
#include <string_view>

namespace tensorstream::azure {

/// The well-known account of the storage emulators (Azurite), and its key.
inline constexpr std::string_view emulator_account = "devstoreaccount1";
inline constexpr std::string_view emulator_key =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// What a connection string says of the blob service; fields it does not name are empty.
struct ConnectionString {
  std::string account;        ///< AccountName.
  std::string account_key;    ///< AccountKey, base64 as given; never logged.
  std::string sas;            ///< SharedAccessSignature, without a leading '?'; never logged.
  /// BlobEndpoint, else made from DefaultEndpointsProtocol, AccountName and EndpointSuffix, else
  /// the emulator's for UseDevelopmentStorage=true; empty when nothing names one.
  std::string blob_endpoint;
};

/// Parses `text`: `Name=value` pairs separated by ';', names in any case, values taken up to the
/// next ';' (keys end in '='). Throws InvalidArgument naming `source` (e.g.
/// "AZURE_STORAGE_CONNECTION_STRING") for a pair without '=' or a string that names neither an
/// account nor an endpoint; messages never quote values.
ConnectionString parse_connection_string(std::string_view text, const std::string& source);

}  // namespace tensorstream::azure
