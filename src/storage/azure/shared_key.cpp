#include "storage/azure/shared_key.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "base/ascii.hpp"
#include "storage/base64.hpp"
#include "storage/percent_decode.hpp"
#include "storage/s3/digest.hpp"

namespace tensorstream::azure {
namespace {

// The standard headers the string to sign lists, one line each, in this order.
constexpr std::array<std::string_view, 11> standard_headers{
    "content-encoding", "content-language",    "content-length", "content-md5",
    "content-type",     "date",                "if-modified-since", "if-match",
    "if-none-match",    "if-unmodified-since", "range"};

// "/account/path" and a line "\nname:value[,value]" per query parameter, names lowercase and
// sorted, values decoded.
std::string canonicalized_resource(std::string_view target, std::string_view account) {
  const auto question = target.find('?');
  std::string resource = "/" + std::string(account) + std::string(target.substr(0, question));
  if (question == std::string_view::npos) return resource;
  std::map<std::string, std::vector<std::string>> parameters;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto equals = pair.find('=');
    parameters[ascii_lowercase(percent_decode(pair.substr(0, equals)))].push_back(
        equals == std::string_view::npos ? std::string() : percent_decode(pair.substr(equals + 1)));
  }
  for (auto& [name, values] : parameters) {
    std::sort(values.begin(), values.end());
    resource += "\n" + name + ":";
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i > 0) resource += ',';
      resource += values[i];
    }
  }
  return resource;
}

}  // namespace

std::string string_to_sign(const RequestHead& head, std::string_view account) {
  std::map<std::string, std::string> standard;
  std::map<std::string, std::string> ms_headers;
  for (const auto& [name, value] : head.headers) {
    std::string lower = ascii_lowercase(name);
    if (lower.starts_with("x-ms-")) {
      ms_headers[std::move(lower)] = std::string(ascii_trim(value));
    } else {
      standard[std::move(lower)] = std::string(ascii_trim(value));
    }
  }
  std::string text(head.method);
  text += '\n';
  for (const std::string_view name : standard_headers) {
    const auto found = standard.find(std::string(name));
    // A Content-Length of 0 is signed as an empty line since version 2015-02-21.
    if (found != standard.end() && !(name == "content-length" && found->second == "0")) {
      text += found->second;
    }
    text += '\n';
  }
  for (const auto& [name, value] : ms_headers) text += name + ":" + value + "\n";
  text += canonicalized_resource(head.target, account);
  return text;
}

std::string shared_key_authorization(const RequestHead& head, std::string_view account,
                                     std::string_view key) {
  const std::string signature = base64_encode(s3::hmac_sha256(key, string_to_sign(head, account)));
  return "SharedKey " + std::string(account) + ":" + signature;
}

}  // namespace tensorstream::azure
