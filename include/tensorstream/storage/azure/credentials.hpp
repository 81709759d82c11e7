#pragma once
/// @file
/// What authorizes requests to Azure Blob Storage, as the credential providers find it: an
/// account key, a shared access signature or a Microsoft Entra ID bearer token.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::azure {

/// The Entra ID scope of tokens for Blob Storage, as client credential grants ask for it.
inline constexpr std::string_view storage_scope = "https://storage.azure.com/.default";
/// The same as a resource, as managed identity endpoints ask for it.
inline constexpr std::string_view storage_resource = "https://storage.azure.com/";

/// One way of authorizing requests.
struct Credentials {
  /// How `secret` authorizes a request.
  enum class Kind {
    shared_key,  ///< `secret` is the account key (base64); requests are signed with Shared Key.
    sas,         ///< `secret` is a SAS token ("sv=...&sig=..."), added to every request's query.
    bearer,      ///< `secret` is an Entra ID access token, sent as "Authorization: Bearer".
  };

  Kind kind = Kind::bearer;
  std::string secret;  ///< Never logged.
  /// shared_key: the account the key belongs to, when its source names one (a connection
  /// string); empty: the account the store addresses.
  std::string account{};
  /// When a token stops working; nullopt for keys and tokens without a known lifetime.
  std::optional<std::chrono::system_clock::time_point> expiration{};
};

}  // namespace tensorstream::azure
