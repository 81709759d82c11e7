#pragma once
/// @file
/// Access tokens of the service account of a Compute Engine VM, GKE node or Cloud Run service.

#include <chrono>
#include <string>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// GETs /computeMetadata/v1/instance/service-accounts/default/token from the metadata server
/// with `Metadata-Flavor: Google`. The server is GCE_METADATA_HOST ("host[:port]") when set,
/// else 169.254.169.254, the address metadata.google.internal resolves to: off Google Cloud,
/// resolving that name can take longer than any timeout of ours bounds. NO_GCE_CHECK=true turns
/// the provider off.
class MetadataServerProvider : public TokenProvider {
 public:
  /// `timeout` bounds the request; short, since off Google Cloud nothing answers.
  explicit MetadataServerProvider(std::chrono::milliseconds timeout = std::chrono::seconds(1));

  /// "GCE metadata server".
  std::string name() const override;

  /// Not configured when turned off, unreachable or answering with an error, unless
  /// GCE_METADATA_HOST was set; then every failure is reported.
  boost::asio::awaitable<AccessToken> get() override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
