#include "storage/s3/sigv4.hpp"

#include <algorithm>
#include <ctime>

#include "base/ascii.hpp"
#include "storage/s3/digest.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";

// SigV4 signs header values with surrounding blanks removed and inner runs of blanks collapsed
// to one space, so that proxies that reformat whitespace do not break the signature.
std::string canonical_value(std::string_view value) {
  std::string result;
  bool blank = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (blank && !result.empty()) result.push_back(' ');
    blank = false;
    result.push_back(c);
  }
  return result;
}

std::string canonical_query(const std::vector<HeaderField>& query) {
  std::vector<HeaderField> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string result;
  for (const auto& [name, value] : encoded) {
    if (!result.empty()) result.push_back('&');
    result += name;
    result.push_back('=');
    result += value;
  }
  return result;
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (c == '/' && keep_slash)) {
      encoded.push_back(static_cast<char>(c));
    } else {
      encoded.push_back('%');
      encoded.push_back(digits[c >> 4]);
      encoded.push_back(digits[c & 0xf]);
    }
  }
  return encoded;
}

std::string payload_hash(std::string_view payload) { return to_hex(sha256(payload)); }

std::string amz_date(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[17];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

SignedRequest sign(const SigningRequest& request, const Credentials& credentials) {
  if (request.path.empty() || request.path.front() != '/') {
    throw InvalidArgument("SigV4: request path \"" + request.path + "\" does not start with '/'");
  }
  SignedRequest signed_request;
  const std::string date_time = amz_date(request.time);
  const std::string date = date_time.substr(0, 8);

  auto& added = signed_request.headers;
  added.emplace_back("x-amz-date", date_time);
  if (request.service == "s3") added.emplace_back("x-amz-content-sha256", request.payload_hash);
  if (!credentials.session_token.empty()) {
    added.emplace_back("x-amz-security-token", credentials.session_token);
  }

  std::vector<HeaderField> canonical_headers;
  canonical_headers.emplace_back("host", canonical_value(request.host));
  for (const auto& [name, value] : request.headers) {
    canonical_headers.emplace_back(ascii_lowercase(name), canonical_value(value));
  }
  for (const auto& [name, value] : added) canonical_headers.emplace_back(name, value);
  std::stable_sort(canonical_headers.begin(), canonical_headers.end(),
                   [](const HeaderField& a, const HeaderField& b) { return a.first < b.first; });

  // A header given twice is signed once, its values joined by commas in the order given.
  std::string header_block;
  std::string signed_headers;
  for (std::size_t i = 0; i < canonical_headers.size(); ++i) {
    const auto& name = canonical_headers[i].first;
    if (i > 0 && canonical_headers[i - 1].first == name) {
      header_block.back() = ',';
    } else {
      if (!signed_headers.empty()) signed_headers.push_back(';');
      signed_headers += name;
      header_block += name;
      header_block.push_back(':');
    }
    header_block += canonical_headers[i].second;
    header_block.push_back('\n');
  }

  signed_request.canonical_request = request.method + '\n' + uri_encode(request.path, true) + '\n' +
                                     canonical_query(request.query) + '\n' + header_block + '\n' +
                                     signed_headers + '\n' + request.payload_hash;

  const std::string scope = date + '/' + request.region + '/' + request.service + "/aws4_request";
  signed_request.string_to_sign = std::string(algorithm) + '\n' + date_time + '\n' + scope + '\n' +
                                  payload_hash(signed_request.canonical_request);

  std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, date);
  key = hmac_sha256(key, request.region);
  key = hmac_sha256(key, request.service);
  key = hmac_sha256(key, "aws4_request");
  signed_request.signature = to_hex(hmac_sha256(key, signed_request.string_to_sign));

  added.emplace_back("Authorization", std::string(algorithm) +
                                          " Credential=" + credentials.access_key_id + '/' + scope +
                                          ", SignedHeaders=" + signed_headers +
                                          ", Signature=" + signed_request.signature);
  return signed_request;
}

}  // namespace tensorstream::s3
