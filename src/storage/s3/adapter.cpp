#include "storage/s3/adapter.hpp"

#include <array>
#include <chrono>
#include <utility>

#include "storage/percent_decode.hpp"
#include "storage/s3/error_document.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {
namespace {

SigningRequest signing_request(const RequestHead& head, const std::string& region) {
  SigningRequest request;
  request.method = std::string(head.method);
  request.host = std::string(head.host);
  const auto question = head.target.find('?');
  // The targets S3Store builds are URI-encoded exactly as SigV4 encodes, so decoding them gives
  // back the key the signer encodes again.
  request.path = percent_decode(head.target.substr(0, question));
  if (question != std::string_view::npos) {
    std::string_view query = head.target.substr(question + 1);
    while (!query.empty()) {
      const auto amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const auto equals = pair.find('=');
      request.query.emplace_back(
          percent_decode(pair.substr(0, equals)),
          equals == std::string_view::npos ? std::string() : percent_decode(pair.substr(equals + 1)));
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    }
  }
  for (const auto& [name, value] : head.headers) request.headers.emplace_back(name, value);
  request.payload_hash =
      std::string(head.payload_hash.empty() ? unsigned_payload : head.payload_hash);
  request.time = std::chrono::system_clock::now();
  request.region = region;
  request.service = "s3";
  return request;
}

bool is_retryable_code(const std::string& code) {
  static constexpr std::array<std::string_view, 5> retryable{
      "SlowDown", "InternalError", "RequestTimeout", "ServiceUnavailable", "Throttling"};
  for (const auto candidate : retryable) {
    if (code == candidate) return true;
  }
  return false;
}

}  // namespace

Adapter::Adapter(std::string region, std::shared_ptr<CredentialsProvider> credentials)
    : region_(std::move(region)), credentials_(std::move(credentials)) {}

boost::asio::awaitable<Authorization> Adapter::authorize(const RequestHead& head) {
  if (!credentials_) co_return Authorization{};
  const Credentials credentials = co_await credentials_->get();
  const SignedRequest signed_request = sign(signing_request(head, region_), credentials);
  std::string lines;
  for (const auto& [name, value] : signed_request.headers) {
    lines += name;
    lines += ": ";
    lines += value;
    lines += "\r\n";
  }
  co_return Authorization{.headers = std::move(lines)};
}

void Adapter::interpret(Failure& failure) const {
  const auto document = parse_error_document(failure.body);
  if (!document) {
    if (failure.status == 403 && failure.body.empty()) {
      failure.cause +=
          " (S3 sends no details with this response: access is denied, or the credentials are "
          "wrong)";
    }
    return;
  }
  failure.cause = document->code;
  if (!document->message.empty()) failure.cause += ": " + document->message;
  failure.cause += " (HTTP " + std::to_string(failure.status);
  if (!document->request_id.empty()) failure.cause += ", request id " + document->request_id;
  failure.cause += ")";
  failure.not_found =
      failure.not_found || document->code == "NoSuchKey" || document->code == "NoSuchBucket";
  failure.transient = failure.transient || is_retryable_code(document->code);
}

}  // namespace tensorstream::s3
