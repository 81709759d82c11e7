#pragma once
// The Hub's dialect of HTTP: a bearer token on every request to the Hub itself, and errors
// explained by the X-Error-Code and X-Error-Message headers.

#include <optional>
#include <string>

#include "storage/http/service_adapter.hpp"

namespace tensorstream::hf {

/// Authorizes requests to the Hub and reads its errors.
class Adapter final : public ServiceAdapter {
 public:
  /// Sends `token`, unless nullopt; `token_source` says where it came from and `endpoint` is
  /// the Hub's ("https://huggingface.co"), for messages.
  Adapter(std::optional<std::string> token, std::string token_source, std::string endpoint);

  /// "Authorization: Bearer TOKEN", or nothing without a token.
  boost::asio::awaitable<Authorization> authorize(const RequestHead& head) override;

  /// Says what a GatedRepo, RepoNotFound, RevisionNotFound or EntryNotFound answer means for
  /// the user (the last three as not_found), and that a 401 without one refused the token.
  void interpret(Failure& failure) const override;

 private:
  std::optional<std::string> token_;
  std::string token_source_;
  std::string endpoint_;
};

}  // namespace tensorstream::hf
