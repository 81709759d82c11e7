#include "storage/azure/adapter.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <utility>

#include "storage/azure/blob_api.hpp"
#include "storage/azure/error_body.hpp"
#include "storage/azure/shared_key.hpp"
#include "storage/base64.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::azure {
namespace {

// RFC 1123, as x-ms-date wants it, in English whatever the process locale.
std::string http_date(std::chrono::system_clock::time_point now) {
  static constexpr std::array<const char*, 7> days{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri",
                                                   "Sat"};
  static constexpr std::array<const char*, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[utc.tm_wday],
                utc.tm_mday, months[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min,
                utc.tm_sec);
  return text;
}

// A random (version 4) UUID: the id support finds a request by in the service's logs.
std::string request_id() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  const std::uint64_t high = (random() & ~0xf000ULL) | 0x4000ULL;
  const std::uint64_t low = (random() & ~(3ULL << 62)) | (1ULL << 63);
  char text[40];
  std::snprintf(text, sizeof text, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(high >> 32),
                static_cast<unsigned long long>((high >> 16) & 0xffff),
                static_cast<unsigned long long>(high & 0xffff),
                static_cast<unsigned long long>(low >> 48),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return text;
}

}  // namespace

Adapter::Adapter(std::string account, std::shared_ptr<CredentialsProvider> credentials)
    : account_(std::move(account)), credentials_(std::move(credentials)) {}

boost::asio::awaitable<Authorization> Adapter::authorize(const RequestHead& head) {
  const std::string date = http_date(std::chrono::system_clock::now());
  const std::string id = request_id();
  Authorization authorization;
  authorization.headers = "x-ms-date: " + date + "\r\nx-ms-version: " +
                          std::string(api_version) + "\r\nx-ms-client-request-id: " + id + "\r\n";
  authorization.trace = "x-ms-client-request-id " + id;
  if (!credentials_) co_return authorization;
  const Credentials credentials = co_await credentials_->get();
  switch (credentials.kind) {
    case Credentials::Kind::shared_key: {
      const auto key = base64_decode(credentials.secret);
      if (!key || key->empty()) {
        throw CredentialsError("Azure", credentials_->name(), "the account key is not base64",
                               true);
      }
      RequestHead signed_head = head;
      signed_head.headers.emplace_back("x-ms-date", date);
      signed_head.headers.emplace_back("x-ms-version", api_version);
      signed_head.headers.emplace_back("x-ms-client-request-id", id);
      const std::string& account = credentials.account.empty() ? account_ : credentials.account;
      authorization.headers +=
          "Authorization: " + shared_key_authorization(signed_head, account, *key) + "\r\n";
      break;
    }
    case Credentials::Kind::sas:
      authorization.query = credentials.secret;
      break;
    case Credentials::Kind::bearer:
      authorization.headers += "Authorization: Bearer " + credentials.secret + "\r\n";
      break;
  }
  co_return authorization;
}

void Adapter::interpret(Failure& failure) const {
  auto error = parse_error_body(failure.body);
  if (!error) {
    // HEAD responses have no body: the code comes alone, in a header.
    const std::string_view code = failure.headers["x-ms-error-code"];
    if (code.empty()) return;
    error = ErrorBody{std::string(code), {}};
  }
  failure.cause = error->code;
  if (!error->message.empty()) failure.cause += ": " + error->message;
  failure.cause += " (HTTP " + std::to_string(failure.status) + ")";
  failure.not_found = failure.not_found || is_not_found_code(error->code);
  failure.transient = failure.transient || is_retryable_code(error->code);
}

}  // namespace tensorstream::azure
