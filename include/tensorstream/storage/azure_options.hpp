#pragma once
/// @file
/// Options of the az:// backend: account, endpoint and credentials.

#include <cstdint>
#include <memory>
#include <string>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream {

/// Options of AzureStore. Empty fields are resolved as the Azure SDKs and CLI resolve them.
struct AzureOptions {
  /// Storage account; empty: AZURE_STORAGE_CONNECTION_STRING's AccountName, else
  /// AZURE_STORAGE_ACCOUNT, else the first label of the endpoint's host
  /// (ACCOUNT.blob.core.windows.net) or the first segment of its path (an emulator's
  /// http://127.0.0.1:10000/devstoreaccount1).
  std::string account{};
  /// Blob service endpoint such as "http://127.0.0.1:10000/devstoreaccount1" (Azurite) or
  /// "https://ACCOUNT.blob.core.usgovcloudapi.net"; empty: the connection string's BlobEndpoint,
  /// else https://ACCOUNT.blob.core.windows.net.
  std::string endpoint{};
  /// Send requests without credentials, for public containers (the CLI's --no-sign-request).
  bool anonymous = false;
  /// Source of credentials; null: the default chain (connection string, AZURE_STORAGE_KEY,
  /// AZURE_STORAGE_SAS_TOKEN, then Entra ID: environment, workload identity, managed identity).
  std::shared_ptr<azure::CredentialsProvider> credentials{};
  /// Most names one List Blobs page returns (Azure's maxresults, at most 5000).
  std::uint32_t list_page_size = 5000;
};

}  // namespace tensorstream
