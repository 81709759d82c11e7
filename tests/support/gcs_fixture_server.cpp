#include "support/gcs_fixture_server.hpp"

#include <simdjson.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "base/json_string.hpp"
#include "support/byte_range.hpp"
#include "support/files.hpp"
#include "support/form_fields.hpp"
#include "support/jwt_parts.hpp"
#include "support/response_ending.hpp"
#include "support/use_tuple.hpp"

namespace tensorstream::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

/// What the server answers to one request.
struct GcsFixtureServer::Reply {
  Reply(unsigned status = 200, std::string body = {},
        std::string content_type = "application/json; charset=UTF-8",
        std::string content_range = {}, std::string generation = {})
      : status(status),
        body(std::move(body)),
        content_type(std::move(content_type)),
        content_range(std::move(content_range)),
        generation(std::move(generation)) {}

  unsigned status;
  std::string body;
  std::string content_type;
  std::string content_range;
  std::string generation;  ///< x-goog-generation of a media download.
  std::string location{};  ///< Location: a resumable upload's session URI.
  std::string range{};     ///< Range: the bytes a resumable upload persisted.
  bool hang_up = false;    ///< Close the connection instead of answering.
  bool silent = false;     ///< Answer nothing until the client closes the connection.
};

namespace {

constexpr std::string_view storage_prefix = "/storage/v1/b/";
constexpr std::string_view upload_prefix = "/upload/storage/v1/b/";
constexpr std::size_t chunk_granularity = 256 << 10;
// Uploads of the tests are a few MiB.
constexpr std::uint64_t max_request_body = 64 << 20;
constexpr std::string_view metadata_token_path =
    "/computeMetadata/v1/instance/service-accounts/default/token";
constexpr std::string_view read_only_scope =
    "https://www.googleapis.com/auth/devstorage.read_only";
constexpr std::string_view read_write_scope =
    "https://www.googleapis.com/auth/devstorage.read_write";

GcsFixtureServer::Reply json_error(unsigned status, const std::string& message,
                                   std::string_view reason) {
  const std::string quoted = json_string(message);
  return {status,
          R"({"error":{"code":)" + std::to_string(status) + R"(,"message":)" + quoted +
              R"(,"errors":[{"message":)" + quoted + R"(,"domain":"global","reason":")" +
              std::string(reason) + R"("}]}})"};
}

GcsFixtureServer::Reply oauth_error(unsigned status, std::string_view error,
                                    const std::string& description) {
  return {status, R"({"error":")" + std::string(error) +
                      R"(","error_description":)" + json_string(description) + "}"};
}

// The error GCS sends with `status` to an upload.
GcsFixtureServer::Reply upload_error(unsigned status) {
  if (status == 403) {
    return json_error(403,
                      "loader@tensorstream-tests.iam.gserviceaccount.com does not have "
                      "storage.objects.create access to the Google Cloud Storage object. "
                      "Permission 'storage.objects.create' denied on resource (or it may not "
                      "exist).",
                      "forbidden");
  }
  if (status == 404) return json_error(404, "The specified bucket does not exist.", "notFound");
  return json_error(status, "We encountered an internal error. Please try again.",
                    "backendError");
}

// A Content-Range of an upload request: "bytes a-b/total", "bytes */total", total "*" when
// unknown.
struct UploadRange {
  std::optional<std::pair<std::uint64_t, std::uint64_t>> bytes;  // First and last.
  std::optional<std::uint64_t> total;
};

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<UploadRange> parse_upload_range(std::string_view header) {
  constexpr std::string_view prefix = "bytes ";
  const auto slash = header.find('/');
  if (!header.starts_with(prefix) || slash == std::string_view::npos) return std::nullopt;
  const auto range = header.substr(prefix.size(), slash - prefix.size());
  const auto total = header.substr(slash + 1);
  UploadRange parsed;
  if (total != "*") {
    parsed.total = number(total);
    if (!parsed.total) return std::nullopt;
  }
  if (range == "*") return parsed;
  const auto dash = range.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = number(range.substr(0, dash));
  const auto last = number(range.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  parsed.bytes = {*first, *last};
  return parsed;
}

std::string object_resource(const std::string& bucket, const std::string& name,
                            std::size_t size, std::int64_t generation) {
  return R"({"kind":"storage#object","name":)" + json_string(name) + R"(,"bucket":)" +
         json_string(bucket) + R"(,"generation":")" + std::to_string(generation) +
         R"(","contentType":"application/octet-stream",)" + R"("size":")" +
         std::to_string(size) + R"("})";
}

}  // namespace

GcsFixtureServer::GcsFixtureServer(Options options)
    : options_(std::move(options)),
      listener_([this](tcp::socket socket) { return serve(std::move(socket)); }) {}

std::int64_t GcsFixtureServer::put(const std::string& bucket, const std::string& name,
                                   std::string bytes) {
  std::lock_guard lock(mutex_);
  return store(bucket, name, std::move(bytes));
}

std::int64_t GcsFixtureServer::store(const std::string& bucket, const std::string& name,
                                     std::string bytes) {
  buckets_[bucket][name] = Object{std::move(bytes), ++last_generation_};
  return last_generation_;
}

void GcsFixtureServer::put_directory(const std::string& bucket, const std::string& prefix,
                                     const std::filesystem::path& directory) {
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (!entry.is_regular_file()) continue;
    put(bucket, prefix + entry.path().filename().string(), read_file(entry.path()));
  }
}

void GcsFixtureServer::make_public(const std::string& bucket) {
  std::lock_guard lock(mutex_);
  buckets_[bucket];
  public_buckets_.insert(bucket);
}

std::string GcsFixtureServer::endpoint() const { return "http://" + host(); }

std::string GcsFixtureServer::host() const { return "127.0.0.1:" + std::to_string(listener_.port()); }

std::string GcsFixtureServer::token_uri() const { return endpoint() + "/token"; }

std::string GcsFixtureServer::issue_token() {
  std::lock_guard lock(mutex_);
  std::string token = "ya29.fixture-token-" + std::to_string(tokens_.size() + 1);
  tokens_.insert(token);
  return token;
}

std::vector<GcsFixtureServer::Request> GcsFixtureServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::optional<std::string> GcsFixtureServer::stored(const std::string& bucket,
                                                    const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto found_bucket = buckets_.find(bucket);
  if (found_bucket == buckets_.end()) return std::nullopt;
  const auto found = found_bucket->second.find(name);
  if (found == found_bucket->second.end()) return std::nullopt;
  return found->second.bytes;
}

std::size_t GcsFixtureServer::unfinished_sessions() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(sessions_.begin(), sessions_.end(),
                    [](const auto& entry) { return !entry.second.completed; }));
}

asio::awaitable<void> GcsFixtureServer::serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(max_request_body);
    if (auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple); ec) {
      co_return;
    }
    const auto& incoming = parser.get();
    const Request request{std::string(incoming.method_string()),
                          std::string(incoming.target()),
                          std::string(incoming[http::field::authorization]),
                          std::string(incoming[http::field::range]),
                          std::string(incoming["Metadata-Flavor"]),
                          std::string(incoming[http::field::content_range]), incoming.body()};
    Reply reply = answer(request);
    if (reply.hang_up) co_return;
    if (reply.silent) {
      co_await write_response(socket, {}, {}, ResponseEnding::stall);
      co_return;
    }
    http::response<http::string_body> response;
    response.version(11);
    response.result(reply.status);
    // Google's names; Beast knows 308 as Permanent Redirect and 499 not at all.
    if (reply.status == 308) response.reason("Resume Incomplete");
    if (reply.status == 499) response.reason("Client Closed Request");
    response.set(http::field::content_type, reply.content_type);
    if (!reply.content_range.empty()) response.set(http::field::content_range, reply.content_range);
    if (!reply.generation.empty()) response.set("x-goog-generation", reply.generation);
    if (!reply.location.empty()) response.set(http::field::location, reply.location);
    if (!reply.range.empty()) response.set(http::field::range, reply.range);
    response.body() = std::move(reply.body);
    response.keep_alive(incoming.keep_alive());
    response.prepare_payload();
    if (auto [ec, n] = co_await http::async_write(socket, response, use_tuple); ec) co_return;
    if (!incoming.keep_alive()) co_return;
  }
}

GcsFixtureServer::Reply GcsFixtureServer::answer(const Request& request) {
  std::lock_guard lock(mutex_);
  requests_.push_back(request);
  const auto [path, query] = split_target(request.target);
  if (request.method == "POST" && path == "/token") return token_grant(request);
  if (request.method == "GET" && path == metadata_token_path) {
    if (request.metadata_flavor != "Google") {
      return {403, "Missing Metadata-Flavor:Google header.", "text/plain"};
    }
    return token_reply();
  }
  if (request.method == "GET" && path.starts_with(storage_prefix)) {
    return storage(path.substr(storage_prefix.size()), query, request);
  }
  if (path.starts_with(upload_prefix)) {
    return upload(path.substr(upload_prefix.size()), query, request);
  }
  return json_error(404, "Not Found", "notFound");
}

std::optional<GcsFixtureServer::Reply> GcsFixtureServer::check_token(
    const std::string& bucket, const Request& request) const {
  if (!options_.require_token || public_buckets_.contains(bucket)) return std::nullopt;
  constexpr std::string_view bearer = "Bearer ";
  const std::string_view authorization = request.authorization;
  if (authorization.empty()) {
    return json_error(401,
                      "Anonymous caller does not have storage.objects.get access to the Google "
                      "Cloud Storage object. Permission 'storage.objects.get' denied on "
                      "resource (or it may not exist).",
                      "required");
  }
  if (!authorization.starts_with(bearer) ||
      !tokens_.contains(std::string(authorization.substr(bearer.size())))) {
    return json_error(401, "Invalid Credentials", "authError");
  }
  return std::nullopt;
}

GcsFixtureServer::Reply GcsFixtureServer::upload(std::string_view path, std::string_view query,
                                                 const Request& request) {
  const auto slash = path.find('/');
  const std::string bucket = percent_decode(path.substr(0, slash), false);
  if (slash == std::string_view::npos || path.substr(slash) != "/o") {
    return json_error(404, "Not Found", "notFound");
  }
  if (auto rejection = check_token(bucket, request)) return *rejection;
  if (options_.on_upload) options_.on_upload(request.method, request.content_range);
  constexpr std::string_view bearer = "Bearer ";
  if (std::string_view(request.authorization).starts_with(bearer) &&
      read_only_tokens_.contains(request.authorization.substr(bearer.size()))) {
    return json_error(403, "Provided scope(s) are not authorized", "forbidden");
  }
  auto parameters = parse_pairs(query, false);
  if (request.method == "DELETE") {
    const auto found = sessions_.find(parameters["upload_id"]);
    if (found == sessions_.end() || found->second.completed) {
      return json_error(404, "No such upload session.", "notFound");
    }
    sessions_.erase(found);
    return {499, "", "text/plain"};
  }
  if (upload_requests_++ < options_.fail_upload_first) {
    return upload_error(options_.upload_fail_status);
  }
  if (request.method == "PUT" && parameters.contains("upload_id")) {
    return chunk(parameters["upload_id"], request);
  }
  if (request.method != "POST") return json_error(405, "Method Not Allowed", "methodNotAllowed");
  if (!buckets_.contains(bucket)) return upload_error(404);
  const std::string& name = parameters["name"];
  if (name.empty()) return json_error(400, "Required parameter: name", "required");
  if (parameters["uploadType"] == "media") {
    const auto generation = store(bucket, name, request.body);
    return {200, object_resource(bucket, name, request.body.size(), generation)};
  }
  if (parameters["uploadType"] != "resumable") {
    return json_error(400, "Invalid upload type.", "invalid");
  }
  const std::string id = "session-" + std::to_string(++last_session_);
  sessions_[id] = Session{bucket, name, {}, false};
  Reply reply{200, ""};
  reply.location = endpoint() + std::string(upload_prefix) + std::string(path) + "?" +
                   std::string(query) + "&upload_id=" + id;
  return reply;
}

GcsFixtureServer::Reply GcsFixtureServer::chunk(const std::string& id, const Request& request) {
  const auto found = sessions_.find(id);
  if (found == sessions_.end()) return json_error(404, "No such upload session.", "notFound");
  Session& session = found->second;
  const auto completed = [&] {
    const Object& object = buckets_.at(session.bucket).at(session.name);
    return Reply{200, object_resource(session.bucket, session.name, object.bytes.size(),
                                      object.generation)};
  };
  if (session.answer_lost) return upload_error(options_.upload_fail_status);
  if (session.completed) return completed();
  if (!request.body.empty() && failed_chunks_++ < options_.fail_chunks_first) {
    return upload_error(options_.upload_fail_status);
  }
  const auto range = parse_upload_range(request.content_range);
  if (!range || (range->bytes && range->bytes->second - range->bytes->first + 1 !=
                                     request.body.size()) ||
      (!range->bytes && !request.body.empty())) {
    return json_error(400, "Invalid Content-Range: " + request.content_range, "invalid");
  }
  std::string& persisted = session.persisted;
  if (range->bytes) {
    const auto [first, last] = *range->bytes;
    if (first > persisted.size()) {
      return json_error(400,
                        "Invalid request. According to the Content-Range header, the upload "
                        "offset is " + std::to_string(first) + " byte(s), which exceeds already "
                        "uploaded size of " + std::to_string(persisted.size()) + " byte(s).",
                        "invalid");
    }
    std::string_view fresh = request.body;
    fresh.remove_prefix(std::min<std::size_t>(fresh.size(), persisted.size() - first));
    if (range->total) {
      persisted += fresh;
    } else if (request.body.size() >= 2 * chunk_granularity &&
               cut_chunks_++ < options_.cut_chunks_first) {
      const std::size_t half = request.body.size() / 2 / chunk_granularity * chunk_granularity;
      if (first + half > persisted.size()) {
        persisted += fresh.substr(0, first + half - persisted.size());
      }
      Reply cut;
      cut.hang_up = true;
      return cut;
    } else {
      // Only whole multiples of 256 KiB of a chunk of unknown total are persisted.
      persisted += fresh;
      persisted.resize(persisted.size() / chunk_granularity * chunk_granularity);
    }
  }
  if (range->total && *range->total < persisted.size()) {
    return json_error(400, "Invalid request: the object size " + std::to_string(*range->total) +
                               " is smaller than the bytes uploaded.", "invalid");
  }
  if (range->total && *range->total == persisted.size()) {
    store(session.bucket, session.name, std::move(persisted));
    session.persisted.clear();
    session.completed = true;
    if (lost_completions_ < options_.lose_completions_first) {
      ++lost_completions_;
      session.answer_lost = true;
      Reply lost;
      lost.silent = true;
      return lost;
    }
    return completed();
  }
  Reply reply{308, ""};
  if (!persisted.empty()) reply.range = "bytes=0-" + std::to_string(persisted.size() - 1);
  return reply;
}

GcsFixtureServer::Reply GcsFixtureServer::storage(std::string_view path, std::string_view query,
                                                  const Request& request) {
  const auto slash = path.find('/');
  const std::string bucket = percent_decode(path.substr(0, slash), false);
  const std::string_view rest =
      slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
  if (rest != "/o" && !rest.starts_with("/o/")) return json_error(404, "Not Found", "notFound");

  if (auto rejection = check_token(bucket, request)) return *rejection;
  if (!buckets_.contains(bucket)) {
    return json_error(404, "The specified bucket does not exist.", "notFound");
  }
  if (rest == "/o") return list(bucket, query);
  const std::string_view encoded = rest.substr(3);
  // GCS routes a path with more segments elsewhere: names must arrive with '/' encoded.
  if (encoded.empty() || encoded.find('/') != std::string_view::npos) {
    return json_error(404, "Not Found", "notFound");
  }
  return object(bucket, percent_decode(encoded, false), query, request);
}

GcsFixtureServer::Reply GcsFixtureServer::object(const std::string& bucket,
                                                 const std::string& name, std::string_view query,
                                                 const Request& request) {
  const auto& objects = buckets_.at(bucket);
  const auto found = objects.find(name);
  if (found == objects.end()) {
    return json_error(404, "No such object: " + bucket + "/" + name, "notFound");
  }
  const std::string& bytes = found->second.bytes;
  const std::string generation = std::to_string(found->second.generation);
  auto parameters = parse_pairs(query, false);
  if (parameters["alt"] != "media") {
    return {200, object_resource(bucket, name, bytes.size(), found->second.generation)};
  }
  if (media_requests_++ < options_.fail_media_first) {
    return json_error(options_.fail_status, "We encountered an internal error. Please try again.",
                      "backendError");
  }
  if (parameters.contains("ifGenerationMatch") && parameters["ifGenerationMatch"] != generation) {
    return json_error(412, "At least one of the pre-conditions you specified did not hold.",
                      "conditionNotMet");
  }
  const auto range = parse_range(request.range, bytes.size());
  if (!range) return {200, bytes, "application/octet-stream", {}, generation};
  if (range->first >= bytes.size()) {
    return json_error(416, "The requested range cannot be satisfied.", "requestedRangeNotSatisfiable");
  }
  return {206, bytes.substr(range->first, range->last - range->first + 1),
          "application/octet-stream",
          "bytes " + std::to_string(range->first) + "-" + std::to_string(range->last) + "/" +
              std::to_string(bytes.size()),
          generation};
}

GcsFixtureServer::Reply GcsFixtureServer::list(const std::string& bucket,
                                               std::string_view query) {
  auto parameters = parse_pairs(query, false);
  const std::string& prefix = parameters["prefix"];
  const std::string& delimiter = parameters["delimiter"];
  // Entries are objects and prefixes, in name order; a page token names the last one sent.
  struct Entry {
    std::string name;
    std::size_t size;
    std::int64_t generation;
    bool is_prefix;
  };
  std::vector<Entry> entries;
  const auto& objects = buckets_.at(bucket);
  for (auto it = objects.lower_bound(prefix); it != objects.end(); ++it) {
    const auto& [name, object] = *it;
    if (!name.starts_with(prefix)) break;
    const auto cut = delimiter.empty() ? std::string::npos : name.find(delimiter, prefix.size());
    if (cut == std::string::npos) {
      entries.push_back({name, object.bytes.size(), object.generation, false});
      continue;
    }
    std::string group = name.substr(0, cut + delimiter.size());
    if (entries.empty() || entries.back().name != group) entries.push_back({group, 0, 0, true});
  }
  constexpr std::string_view token_prefix = "after:";
  std::size_t start = 0;
  if (const std::string& token = parameters["pageToken"]; !token.empty()) {
    if (!token.starts_with(token_prefix)) return json_error(400, "Invalid pageToken.", "invalid");
    const std::string after = token.substr(token_prefix.size());
    while (start < entries.size() && entries[start].name <= after) ++start;
  }
  const std::size_t end = std::min(entries.size(), start + options_.page_size);
  std::string items;
  std::string prefixes;
  for (std::size_t i = start; i < end; ++i) {
    std::string& list = entries[i].is_prefix ? prefixes : items;
    if (!list.empty()) list += ',';
    list += entries[i].is_prefix ? json_string(entries[i].name)
                                 : object_resource(bucket, entries[i].name, entries[i].size,
                                                   entries[i].generation);
  }
  std::string body = R"({"kind":"storage#objects")";
  if (end < entries.size()) {
    body += R"(,"nextPageToken":)" + json_string(std::string(token_prefix) + entries[end - 1].name);
  }
  if (!prefixes.empty()) body += R"(,"prefixes":[)" + prefixes + "]";
  if (!items.empty()) body += R"(,"items":[)" + items + "]";
  return {200, body + "}"};
}

GcsFixtureServer::Reply GcsFixtureServer::token_grant(const Request& request) {
  if (token_requests_++ < options_.fail_token_first) {
    return {options_.fail_status, R"({"error":"internal_failure"})", "application/json"};
  }
  auto form = parse_pairs(request.body, true);
  const std::string& grant = form["grant_type"];
  if (grant == "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    bool read_only = false;
    if (auto rejection = verify_assertion(form["assertion"], read_only)) return *rejection;
    return token_reply(read_only);
  }
  if (grant == "refresh_token") {
    if (form["client_id"] != options_.client_id || form["client_secret"] != options_.client_secret) {
      return oauth_error(401, "invalid_client", "The OAuth client was not found.");
    }
    if (form["refresh_token"] != options_.refresh_token) {
      return oauth_error(400, "invalid_grant", "Token has been expired or revoked.");
    }
    return token_reply();
  }
  return oauth_error(400, "unsupported_grant_type", "Invalid grant_type: " + grant);
}

GcsFixtureServer::Reply GcsFixtureServer::token_reply(bool read_only) {
  std::string token = "ya29.fixture-token-" + std::to_string(tokens_.size() + 1);
  tokens_.insert(token);
  if (read_only) read_only_tokens_.insert(token);
  return {200, R"({"access_token":")" + token + R"(","expires_in":)" +
                   std::to_string(options_.token_lifetime) + R"(,"token_type":"Bearer"})"};
}

// Google's answer to a bad assertion; nullopt for a good one.
std::optional<GcsFixtureServer::Reply> GcsFixtureServer::verify_assertion(
    const std::string& assertion, bool& read_only) const {
  const auto invalid = [](const std::string& description) {
    return oauth_error(400, "invalid_grant", description);
  };
  const auto first_dot = assertion.find('.');
  const auto second_dot = assertion.find('.', first_dot + 1);
  if (first_dot == std::string::npos || second_dot == std::string::npos) {
    return invalid("Invalid JWT: not three dot-separated parts");
  }
  const auto header = base64url_decode(std::string_view(assertion).substr(0, first_dot));
  const auto claims = base64url_decode(
      std::string_view(assertion).substr(first_dot + 1, second_dot - first_dot - 1));
  const auto signature = base64url_decode(std::string_view(assertion).substr(second_dot + 1));
  if (!header || !claims || !signature) return invalid("Invalid JWT: not base64url");

  simdjson::dom::parser parser;
  std::string_view alg;
  std::string_view typ;
  const simdjson::padded_string padded_header(*header);
  const auto header_object = parser.parse(padded_header);
  if (header_object["alg"].get(alg) || header_object["typ"].get(typ) || alg != "RS256" ||
      typ != "JWT") {
    return invalid("Invalid JWT: header is not {\"alg\":\"RS256\",\"typ\":\"JWT\"}");
  }
  if (options_.service_account_public_key.empty() ||
      !verify_rs256(options_.service_account_public_key,
                    std::string_view(assertion).substr(0, second_dot), *signature)) {
    return invalid("Invalid JWT Signature.");
  }
  simdjson::dom::parser claims_parser;
  const simdjson::padded_string padded_claims(*claims);
  const auto claims_object = claims_parser.parse(padded_claims);
  std::string_view iss;
  std::string_view scope;
  std::string_view aud;
  std::int64_t iat = 0;
  std::int64_t exp = 0;
  if (claims_object["iss"].get(iss) || claims_object["aud"].get(aud) ||
      claims_object["iat"].get(iat) || claims_object["exp"].get(exp)) {
    return invalid("Invalid JWT: missing claims");
  }
  if (iss != options_.service_account) return invalid("Invalid grant: account not found");
  if (aud != token_uri()) return invalid("Invalid JWT: Failed audience check.");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  if (iat > now + 300 || iat < now - 300 || exp <= iat || exp - iat > 3600) {
    return invalid("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
           "timeframe. Check your iat and exp values in the JWT claim.");
  }
  if (claims_object["scope"].get(scope) ||
      (scope != read_only_scope && scope != read_write_scope)) {
    return oauth_error(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.");
  }
  read_only = scope == read_only_scope;
  return std::nullopt;
}

std::string service_account_key_file(const std::string& client_email,
                                     const std::string& private_key,
                                     const std::string& token_uri) {
  return R"({"type":"service_account","project_id":"tensorstream-tests",)"
         R"("private_key_id":"0123456789abcdef","private_key":)" +
         json_string(private_key) + R"(,"client_email":)" + json_string(client_email) +
         R"(,"client_id":"1234567890","auth_uri":"https://accounts.google.com/o/oauth2/auth",)"
         R"("token_uri":)" + json_string(token_uri) + "}";
}

}  // namespace tensorstream::testing
