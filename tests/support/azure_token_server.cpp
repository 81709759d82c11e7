#include "support/azure_token_server.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <simdjson.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <utility>

#include "base/json_string.hpp"
#include "storage/jwt.hpp"
#include "support/form_fields.hpp"
#include "support/jwt_parts.hpp"
#include "support/rsa_certificate.hpp"
#include "support/use_tuple.hpp"

namespace tensorstream::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

/// What the server answers to one request.
struct AzureTokenServer::Reply {
  unsigned status = 200;
  std::string body;
};

namespace {

constexpr std::string_view storage_scope = "https://storage.azure.com/.default";
constexpr std::string_view storage_resource = "https://storage.azure.com/";
constexpr std::string_view jwt_bearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
constexpr std::string_view imds_path = "/metadata/identity/oauth2/token";
constexpr std::string_view app_service_path = "/msi/token";
// Signs the tokens issued; nobody verifies it.
constexpr std::string_view token_signing_key = "tensorstream-azure-token-server";

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Entra ID's error body: {"error": ..., "error_description": ..., "error_codes": [N]} (N is
// the number of the AADSTS code at the start of the description).
AzureTokenServer::Reply entra_error(unsigned status, std::string_view error,
                                    const std::string& description) {
  const auto digits = description.substr(6, description.find(':') - 6);
  return {status, R"({"error":")" + std::string(error) + R"(","error_description":)" +
                      json_string(description) + R"(,"error_codes":[)" + digits +
                      R"(],"trace_id":"00000000-0000-0000-0000-000000000000"})"};
}

// IMDS's and App Service's error body.
AzureTokenServer::Reply identity_error(unsigned status, std::string_view error,
                                       std::string_view description) {
  return {status, R"({"error":")" + std::string(error) + R"(","error_description":")" +
                      std::string(description) + R"("})"};
}

std::string hs256(std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token_signing_key.data(), static_cast<int>(token_signing_key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

}  // namespace

AzureTokenServer::AzureTokenServer(Options options)
    : options_(std::move(options)),
      listener_([this](tcp::socket socket) { return serve(std::move(socket)); }) {
  if (!options_.client_certificate.empty()) {
    const auto certificate = RsaCertificate::of(options_.client_certificate);
    public_key_ = certificate.public_key;
    thumbprint_ = certificate.thumbprint();
  }
}

std::string AzureTokenServer::authority() const { return "http://" + host(); }

std::string AzureTokenServer::host() const {
  return "127.0.0.1:" + std::to_string(listener_.port());
}

std::string AzureTokenServer::token_url() const {
  return authority() + "/" + options_.tenant + "/oauth2/v2.0/token";
}

std::string AzureTokenServer::app_service_endpoint() const {
  return authority() + std::string(app_service_path);
}

int AzureTokenServer::requests(Flow flow) const {
  std::lock_guard lock(mutex_);
  const auto found = counts_.find(flow);
  return found == counts_.end() ? 0 : found->second;
}

std::vector<AzureTokenServer::Request> AzureTokenServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::string AzureTokenServer::last_token() const {
  std::lock_guard lock(mutex_);
  return last_token_;
}

std::int64_t AzureTokenServer::last_expires_on() const {
  std::lock_guard lock(mutex_);
  return last_expires_on_;
}

asio::awaitable<void> AzureTokenServer::serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> incoming;
    if (auto [ec, n] = co_await http::async_read(socket, buffer, incoming, use_tuple); ec) {
      co_return;
    }
    const Request request{std::string(incoming.method_string()), std::string(incoming.target()),
                          std::string(incoming["Metadata"]),
                          std::string(incoming["X-IDENTITY-HEADER"]), incoming.body()};
    Reply reply = answer(request);
    http::response<http::string_body> response(static_cast<http::status>(reply.status), 11);
    response.set(http::field::content_type, "application/json; charset=utf-8");
    response.body() = std::move(reply.body);
    response.keep_alive(incoming.keep_alive());
    response.prepare_payload();
    if (auto [ec, n] = co_await http::async_write(socket, response, use_tuple); ec) co_return;
    if (!incoming.keep_alive()) co_return;
  }
}

AzureTokenServer::Reply AzureTokenServer::answer(const Request& request) {
  std::lock_guard lock(mutex_);
  requests_.push_back(request);
  const auto [path, query] = split_target(request.target);
  if (request.method == "POST" && path.ends_with("/oauth2/v2.0/token")) {
    return token_grant(request);
  }
  if (request.method == "GET" && path == imds_path) {
    ++counts_[Flow::imds];
    if (request.metadata != "true") {
      return identity_error(400, "invalid_request", "Required metadata header not specified");
    }
    return managed_identity(Flow::imds, query);
  }
  if (request.method == "GET" && path == app_service_path) {
    ++counts_[Flow::app_service];
    if (request.identity_header != options_.identity_header) {
      return identity_error(401, "unauthorized", "X-IDENTITY-HEADER is missing or wrong");
    }
    return managed_identity(Flow::app_service, query);
  }
  return identity_error(404, "not_found", "No such endpoint");
}

AzureTokenServer::Reply AzureTokenServer::token_grant(const Request& request) {
  auto form = parse_pairs(request.body, true);
  const std::string& client_id = form["client_id"];
  Flow flow = Flow::client_secret;
  std::optional<Reply> refusal;
  if (request.target != "/" + options_.tenant + "/oauth2/v2.0/token") {
    refusal = entra_error(400, "invalid_request",
                          "AADSTS90002: Tenant '" +
                              request.target.substr(1, request.target.find('/', 1) - 1) +
                              "' not found. Check to make sure you have the correct tenant ID "
                              "and are signing into the correct cloud.");
  } else if (form["grant_type"] != "client_credentials") {
    refusal = entra_error(400, "unsupported_grant_type",
                          "AADSTS70003: The app requested an unsupported grant type '" +
                              form["grant_type"] + "'.");
  } else if (client_id != options_.client_id) {
    refusal = entra_error(400, "unauthorized_client",
                          "AADSTS700016: Application with identifier '" + client_id +
                              "' was not found in the directory '" + options_.tenant + "'.");
  } else if (form["scope"] != storage_scope) {
    refusal = entra_error(400, "invalid_scope",
                          "AADSTS1002012: The provided value for scope " + form["scope"] +
                              " is not valid. Client credential flows must have a scope value "
                              "with /.default suffixed to the resource identifier.");
  } else if (form.contains("client_secret")) {
    if (form["client_secret"] != options_.client_secret) {
      refusal = entra_error(
          401, "invalid_client",
          "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the "
          "request is the client secret value, not the client secret ID, for a secret added to "
          "app '" + options_.client_id + "'.");
    }
  } else if (form["client_assertion_type"] != jwt_bearer) {
    refusal = entra_error(400, "invalid_request",
                          "AADSTS7000218: The request body must contain the following parameter: "
                          "'client_assertion' or 'client_secret'.");
  } else {
    refusal = check_assertion(form["client_assertion"], flow);
  }
  ++counts_[flow];
  if (refusal) return *refusal;
  const std::string token = issue(client_id);
  return {200, R"({"token_type":"Bearer","expires_in":)" + std::to_string(options_.token_lifetime) +
                   R"(,"ext_expires_in":)" + std::to_string(options_.token_lifetime) +
                   R"(,"access_token":")" + token + R"("})"};
}

// Entra ID's answer to a bad assertion; nullopt for a good one. Sets `flow` to the kind of
// assertion it is: a federated token or one signed by the certificate's key.
std::optional<AzureTokenServer::Reply> AzureTokenServer::check_assertion(
    const std::string& assertion, Flow& flow) const {
  const auto invalid = [](const std::string& description) {
    return entra_error(401, "invalid_client", description);
  };
  flow = Flow::workload_identity;
  if (!options_.federated_token.empty() && assertion == options_.federated_token) {
    return std::nullopt;
  }
  // Only an assertion naming a certificate (x5t) is taken for one signed by a key.
  const auto parts = JwtParts::parse(assertion);
  simdjson::dom::parser parser;
  std::string_view alg;
  std::string_view x5t;
  const simdjson::padded_string header(parts ? parts->header : std::string("{}"));
  const auto header_object = parser.parse(header);
  if (!parts || header_object["x5t"].get(x5t)) {
    return invalid("AADSTS70021: No matching federated identity record found for presented "
                   "assertion.");
  }
  flow = Flow::client_certificate;
  if (header_object["alg"].get(alg)) {
    return invalid("AADSTS50027: JWT token is invalid or malformed.");
  }
  if (alg != "RS256" || x5t != thumbprint_ || thumbprint_.empty()) {
    return invalid("AADSTS700027: The certificate with identifier used to sign the client "
                   "assertion is not registered on application.");
  }
  if (!verify_rs256(public_key_, parts->signing_input, parts->signature)) {
    return invalid("AADSTS700027: Client assertion failed signature validation.");
  }
  simdjson::dom::parser claims_parser;
  const simdjson::padded_string claims(parts->claims);
  const auto claims_object = claims_parser.parse(claims);
  std::string_view aud;
  std::string_view iss;
  std::string_view sub;
  std::string_view jti;
  std::int64_t nbf = 0;
  std::int64_t exp = 0;
  if (claims_object["aud"].get(aud) || claims_object["iss"].get(iss) ||
      claims_object["sub"].get(sub) || claims_object["jti"].get(jti) ||
      claims_object["nbf"].get(nbf) || claims_object["exp"].get(exp) || jti.empty()) {
    return invalid("AADSTS50027: JWT token is invalid or malformed.");
  }
  if (aud != token_url()) {
    return invalid("AADSTS700212: No matching federated identity record found for presented "
                   "assertion audience '" + std::string(aud) + "'.");
  }
  if (iss != options_.client_id || sub != options_.client_id) {
    return invalid("AADSTS700021: Client assertion application identifier doesn't match "
                   "'client_id' parameter.");
  }
  const std::int64_t now = now_seconds();
  if (nbf > now + 300 || exp <= now || exp <= nbf || exp - nbf > 3600) {
    return invalid("AADSTS700024: Client assertion is not within its valid time range.");
  }
  return std::nullopt;
}

AzureTokenServer::Reply AzureTokenServer::managed_identity(Flow flow, std::string_view query) {
  auto parameters = parse_pairs(query, false);
  const std::string& version = parameters["api-version"];
  if (version != (flow == Flow::imds ? "2018-02-01" : "2019-08-01")) {
    return identity_error(400, "invalid_request", "Invalid or missing api-version");
  }
  if (parameters["resource"] != storage_resource) {
    return identity_error(400, "invalid_resource",
                          "AADSTS500011: The resource principal named " + parameters["resource"] +
                              " was not found in the tenant.");
  }
  std::string client_id = parameters["client_id"];
  if (!client_id.empty() && client_id != options_.user_assigned_client_id) {
    return identity_error(400, "invalid_request", "Identity not found");
  }
  if (client_id.empty()) client_id = "system-assigned";
  const std::string token = issue(client_id);
  const std::string expires_on = std::to_string(last_expires_on_);
  if (flow == Flow::app_service) {
    return {200, R"({"access_token":")" + token + R"(","expires_on":")" + expires_on +
                     R"(","resource":"https://storage.azure.com/","token_type":"Bearer",)"
                     R"("client_id":")" + client_id + R"("})"};
  }
  const std::string lifetime = std::to_string(options_.token_lifetime);
  return {200, R"({"access_token":")" + token + R"(","client_id":")" + client_id +
                   R"(","expires_in":")" + lifetime + R"(","expires_on":")" + expires_on +
                   R"(","ext_expires_in":")" + lifetime + R"(","not_before":")" +
                   std::to_string(last_expires_on_ - options_.token_lifetime) +
                   R"(","resource":"https://storage.azure.com/","token_type":"Bearer"})"};
}

std::string AzureTokenServer::issue(const std::string& client_id) {
  const std::int64_t now = now_seconds();
  last_expires_on_ = now + options_.token_lifetime;
  const std::string header = R"({"alg":"HS256","typ":"JWT"})";
  const std::string claims =
      R"({"aud":"https://storage.azure.com","iss":"https://sts.windows.net/)" + options_.tenant +
      R"(/","iat":)" + std::to_string(now) + R"(,"nbf":)" + std::to_string(now) +
      R"(,"exp":)" + std::to_string(last_expires_on_) + R"(,"appid":)" + json_string(client_id) +
      R"(,"oid":"00000000-0000-0000-0000-00000000000a","tid":")" + options_.tenant +
      R"(","uti":"token-)" + std::to_string(++issued_) + R"("})";
  const std::string signing_input = base64url(header) + "." + base64url(claims);
  last_token_ = signing_input + "." + base64url(hs256(signing_input));
  return last_token_;
}

}  // namespace tensorstream::testing
