#pragma once
// The S3 dialect of HTTP: SigV4 on every attempt, and error codes from the XML bodies.

#include <memory>
#include <string>

#include "storage/http/service_adapter.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Signs requests to one S3 endpoint and reads S3's error documents.
class Adapter final : public ServiceAdapter {
 public:
  /// Signs for `region` with what `credentials` loads; null `credentials` sends requests unsigned.
  Adapter(std::string region, std::shared_ptr<CredentialsProvider> credentials);

  /// x-amz-date, x-amz-content-sha256 (the head's payload hash, else UNSIGNED-PAYLOAD),
  /// x-amz-security-token and
  /// Authorization for `head`, signed now; nothing when unsigned. Throws CredentialsError when
  /// the credentials cannot be loaded.
  boost::asio::awaitable<Authorization> authorize(const RequestHead& head) override;

  /// "NoSuchKey: The specified key does not exist." from the error document; S3's retryable
  /// codes (SlowDown, InternalError, RequestTimeout, ServiceUnavailable) become transient, and
  /// NoSuchKey and NoSuchBucket not-found.
  void interpret(Failure& failure) const override;

 private:
  std::string region_;
  std::shared_ptr<CredentialsProvider> credentials_;
};

}  // namespace tensorstream::s3
