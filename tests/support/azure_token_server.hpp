#pragma once
// A stand-in for Microsoft Entra ID and Azure's managed identity endpoints, since neither can
// run here: the token endpoint of a tenant, IMDS and the App Service identity endpoint, as
// Microsoft documents them, issuing tokens that Azurite accepts.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// An HTTP/1.1 server on an ephemeral 127.0.0.1 port, running in its own thread, serving:
///
/// - `POST /{tenant}/oauth2/v2.0/token`: the client credentials grant of the configured
///   application for scope https://storage.azure.com/.default, which proves itself with its
///   client secret, with a client assertion signed by the key of the configured certificate
///   (RS256; header x5t the certificate's thumbprint; aud the token URL, iss = sub = the client
///   id, nbf and exp around now, at most an hour apart, and a jti), or with the configured
///   federated token as the assertion (workload identity). Refusals are OAuth error bodies
///   with Entra ID's AADSTS messages, e.g. 401 "invalid_client: AADSTS7000215: Invalid client
///   secret provided...".
/// - `GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=R[&client_id=C]` with
///   `Metadata: true`, as IMDS: the system-assigned identity, or the user-assigned one whose
///   client id is configured. expires_in and expires_on are decimal strings, as from IMDS.
/// - `GET /msi/token?api-version=2019-08-01&resource=R[&client_id=C]` with the configured
///   `X-IDENTITY-HEADER`, as App Service: the same identities, expires_on a string.
///
/// Tokens are JWTs (HS256 with a key of the server's: nobody checks the signature) with aud
/// "https://storage.azure.com", iss "https://sts.windows.net/{tenant}/", iat, nbf and exp, as
/// Azurite's `--oauth basic` checks them.
class AzureTokenServer {
 public:
  /// Who may get tokens.
  struct Options {
    std::string tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    /// The application of the client credentials grant.
    std::string client_id = "0b6f8c5e-1e2f-4f56-9a3b-6d8e7f1a2b3c";
    std::string client_secret = "tensorstream~client.secret";
    /// The application's certificate (PEM); no assertion signed by a key is accepted while empty.
    std::string client_certificate{};
    /// The federated token accepted as an assertion (workload identity); none while empty.
    std::string federated_token{};
    /// The user-assigned managed identity, besides the system-assigned one.
    std::string user_assigned_client_id = "5f1f0a4e-7c0d-4c3b-8a2e-9b4d6c8e0f12";
    /// What App Service's identity endpoint wants in X-IDENTITY-HEADER.
    std::string identity_header = "tensorstream-identity-header";
    /// Lifetime of the tokens issued, in seconds.
    int token_lifetime = 3600;
  };

  /// The ways of getting a token, whose requests are counted apart.
  enum class Flow { client_secret, client_certificate, workload_identity, imds, app_service };

  /// One request as received.
  struct Request {
    std::string method;
    std::string target;           ///< As sent, percent-encoding kept.
    std::string metadata;         ///< The Metadata header; empty when absent.
    std::string identity_header;  ///< X-IDENTITY-HEADER; empty when absent.
    std::string body;
  };

  /// Starts serving.
  explicit AzureTokenServer(Options options);

  AzureTokenServer(const AzureTokenServer&) = delete;
  AzureTokenServer& operator=(const AzureTokenServer&) = delete;

  /// "http://127.0.0.1:PORT", as AZURE_AUTHORITY_HOST and AZURE_POD_IDENTITY_AUTHORITY_HOST
  /// take it.
  std::string authority() const;

  /// "127.0.0.1:PORT".
  std::string host() const;

  /// authority() + "/{tenant}/oauth2/v2.0/token".
  std::string token_url() const;

  /// authority() + "/msi/token", as IDENTITY_ENDPOINT takes it.
  std::string app_service_endpoint() const;

  /// The requests `flow` got so far, refused ones included.
  int requests(Flow flow) const;

  /// Every request received so far, in order.
  std::vector<Request> requests() const;

  /// The last token issued, and its exp (epoch seconds); empty and 0 before the first.
  std::string last_token() const;
  std::int64_t last_expires_on() const;

  /// What the server answers to one request (defined with the server).
  struct Reply;

 private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  Reply answer(const Request& request);
  Reply token_grant(const Request& request);
  std::optional<Reply> check_assertion(const std::string& assertion, Flow& flow) const;
  Reply managed_identity(Flow flow, std::string_view query);
  // A new token for `client_id`, with its exp in last_expires_on_.
  std::string issue(const std::string& client_id);

  const Options options_;
  std::string public_key_;  // Of the client certificate.
  std::string thumbprint_;  // Of the client certificate.
  mutable std::mutex mutex_;
  std::map<Flow, int> counts_;
  std::vector<Request> requests_;
  std::string last_token_;
  std::int64_t last_expires_on_ = 0;
  int issued_ = 0;
  LoopbackListener listener_;
};

}  // namespace tensorstream::testing
