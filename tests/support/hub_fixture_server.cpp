#include "support/hub_fixture_server.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/json_string.hpp"
#include "support/byte_range.hpp"
#include "support/files.hpp"
#include "support/form_fields.hpp"
#include "support/sha256.hpp"
#include "support/use_tuple.hpp"

namespace tensorstream::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

/// What a server answers: a text body, or a range of a file's bytes.
struct HubFixtureServer::Reply {
  unsigned status = 200;
  std::string body{};
  std::string content_type = "application/json; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers{};
  std::shared_ptr<const std::string> bytes{};  // When set, bytes_first.. bytes_first+count.
  std::size_t bytes_first = 0;
  std::size_t bytes_count = 0;
};

namespace {

constexpr std::string_view signing_secret = "hub-fixture-cdn-secret";

std::string hex_digest(std::string_view text) {
  return sha256_hex(std::as_bytes(std::span(text.data(), text.size())));
}

HubFixtureServer::Reply hub_error(unsigned status, std::string code, const std::string& message) {
  HubFixtureServer::Reply reply{status, R"({"error":)" + json_string(message) + "}"};
  if (!code.empty()) reply.headers.emplace_back("X-Error-Code", std::move(code));
  reply.headers.emplace_back("X-Error-Message", message);
  return reply;
}

// The reply of a GET of `bytes` with `range` (empty: none), with `etag`.
HubFixtureServer::Reply file_reply(std::shared_ptr<const std::string> bytes,
                                   const std::string& range, const std::string& etag) {
  HubFixtureServer::Reply reply;
  reply.content_type = "application/octet-stream";
  reply.headers.emplace_back("ETag", "\"" + etag + "\"");
  reply.headers.emplace_back("Accept-Ranges", "bytes");
  const std::uint64_t size = bytes->size();
  const auto parsed = parse_range(range, size);
  if (parsed && parsed->first >= size) {
    reply.status = 416;
    reply.content_type = "text/plain";
    reply.body = "Requested Range Not Satisfiable";
    reply.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
    return reply;
  }
  reply.bytes_first = parsed ? parsed->first : 0;
  reply.bytes_count = parsed ? parsed->last - parsed->first + 1 : size;
  if (parsed) {
    reply.status = 206;
    reply.headers.emplace_back("Content-Range", "bytes " + std::to_string(parsed->first) + "-" +
                                                    std::to_string(parsed->last) + "/" +
                                                    std::to_string(size));
  }
  reply.bytes = std::move(bytes);
  return reply;
}

// The folders of the paths of `tree`: "a/b/c.bin" has "a" and "a/b".
template <class Tree>
std::set<std::string> folders_of(const Tree& tree) {
  std::set<std::string> folders;
  for (const auto& [path, file] : tree) {
    for (auto slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      folders.insert(path.substr(0, slash));
    }
  }
  return folders;
}

}  // namespace

HubFixtureServer::HubFixtureServer(Options options)
    : options_(std::move(options)),
      hub_listener_([this](tcp::socket socket) { return serve(std::move(socket), false); }),
      cdn_listener_([this](tcp::socket socket) { return serve(std::move(socket), true); }) {}

HubFixtureServer::~HubFixtureServer() = default;

std::string HubFixtureServer::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(hub_listener_.port());
}

std::string HubFixtureServer::cdn_endpoint() const {
  return "http://127.0.0.1:" + std::to_string(cdn_listener_.port());
}

std::string HubFixtureServer::commit(const std::string& repo,
                                     const std::map<std::string, std::string>& files,
                                     const std::string& branch) {
  Tree tree;
  for (const auto& [path, bytes] : files) {
    File file{std::make_shared<const std::string>(bytes), hex_digest(bytes), {}};
    file.oid = hex_digest("blob " + bytes).substr(0, 40);
    tree.emplace(path, std::move(file));
  }
  std::lock_guard lock(mutex_);
  const std::string sha =
      hex_digest(repo + "@" + branch + "#" + std::to_string(++commits_)).substr(0, 40);
  Repo& stored = repos_[repo];
  stored.commits[sha] = std::move(tree);
  stored.branches[branch] = sha;
  return sha;
}

std::string HubFixtureServer::commit_directory(const std::string& repo,
                                               const std::filesystem::path& directory,
                                               const std::string& branch) {
  std::map<std::string, std::string> files;
  for (const auto& path : files_under(directory)) files[path] = read_file(directory / path);
  return commit(repo, files, branch);
}

void HubFixtureServer::make_gated(const std::string& repo) {
  std::lock_guard lock(mutex_);
  repos_[repo].gated = true;
}

std::string HubFixtureServer::cdn_url(const std::string& repo, const std::string& revision,
                                      const std::string& path) {
  std::lock_guard lock(mutex_);
  const Repo& stored = repos_.at(repo);
  return cdn_endpoint() + sign_locked(stored.commits.at(commit_of(stored, revision)).at(path));
}

std::vector<HubFixtureServer::Request> HubFixtureServer::hub_requests() const {
  std::lock_guard lock(mutex_);
  return hub_log_;
}

std::vector<HubFixtureServer::Request> HubFixtureServer::cdn_requests() const {
  std::lock_guard lock(mutex_);
  return cdn_log_;
}

int HubFixtureServer::leaked_tokens() const {
  std::lock_guard lock(mutex_);
  return leaked_tokens_;
}

std::string HubFixtureServer::commit_of(const Repo& repo, const std::string& revision) const {
  if (const auto found = repo.branches.find(revision); found != repo.branches.end()) {
    return found->second;
  }
  return repo.commits.contains(revision) ? revision : std::string();
}

std::string HubFixtureServer::sign_locked(const File& file) {
  const std::string id = std::to_string(signed_.size() + 1);
  signed_[id] = Signed{file.bytes, file.sha256, 0};
  const std::string expires = "4102444800";  // 2100-01-01: expiry is cdn_url_uses' business.
  return "/repos/" + file.sha256 + "?Expires=" + expires + "&Key-Pair-Id=" + id +
         "&Signature=" + hex_digest(std::string(signing_secret) + id + file.sha256 + expires);
}

asio::awaitable<void> HubFixtureServer::serve(tcp::socket socket, bool cdn) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::empty_body> parser;
    if (auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple); ec) {
      co_return;
    }
    const auto& incoming = parser.get();
    const Request request{std::string(incoming.method_string()), std::string(incoming.target()),
                          std::string(incoming[http::field::authorization]),
                          std::string(incoming[http::field::range]),
                          std::chrono::steady_clock::now()};
    Reply reply = cdn ? this->cdn(request) : hub(request);
    if (!cdn && options_.bare_errors && reply.status >= 400) {
      reply = Reply{reply.status, "", "text/plain"};
    }
    const bool head = request.method == "HEAD";
    if (reply.bytes) {
      http::response<http::span_body<const char>> response;
      response.version(11);
      response.result(reply.status);
      response.set(http::field::content_type, reply.content_type);
      for (const auto& [name, value] : reply.headers) response.set(name, value);
      response.body() = std::span<const char>(reply.bytes->data() + reply.bytes_first,
                                              head ? 0 : reply.bytes_count);
      response.keep_alive(incoming.keep_alive());
      response.content_length(reply.bytes_count);
      http::response_serializer<http::span_body<const char>> serializer(response);
      if (head) serializer.split(true);
      boost::system::error_code ec;
      if (head) {
        std::tie(ec, std::ignore) =
            co_await http::async_write_header(socket, serializer, use_tuple);
      } else {
        std::tie(ec, std::ignore) = co_await http::async_write(socket, serializer, use_tuple);
      }
      if (ec) co_return;
    } else {
      http::response<http::string_body> response;
      response.version(11);
      response.result(reply.status);
      response.set(http::field::content_type, reply.content_type);
      for (const auto& [name, value] : reply.headers) response.set(name, value);
      response.body() = std::move(reply.body);
      response.keep_alive(incoming.keep_alive());
      response.prepare_payload();
      if (auto [ec, n] = co_await http::async_write(socket, response, use_tuple); ec) co_return;
    }
    if (!incoming.keep_alive()) co_return;
  }
}

HubFixtureServer::Reply HubFixtureServer::hub(const Request& request) {
  std::lock_guard lock(mutex_);
  hub_log_.push_back(request);
  if (++hub_requests_seen_ <= options_.throttle_first) {
    Reply reply = hub_error(429, "", "You have been rate-limited; retry later.");
    reply.headers.emplace_back("Retry-After", std::to_string(options_.retry_after_seconds));
    return reply;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return hub_error(405, "", "Method not allowed");
  }
  const bool has_token = !request.authorization.empty();
  const bool good_token = request.authorization == "Bearer " + options_.token;
  if (has_token && !good_token) {
    return hub_error(401, "", "Invalid credentials in Authorization header");
  }
  const auto [path, query] = split_target(request.target);
  std::string_view rest = path;
  const bool api = rest.starts_with("/api/models/");
  rest.remove_prefix(api ? 12 : 1);
  // ORG/NAME/VERB/REVISION[/PATH]
  std::vector<std::string> parts;
  for (int i = 0; i < 4 && !rest.empty(); ++i) {
    const auto slash = rest.find('/');
    parts.push_back(percent_decode(rest.substr(0, slash), false));
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  }
  const std::string file_path = percent_decode(rest, false);
  if (parts.size() < 4) return hub_error(404, "", "Not Found");
  const std::string repo = parts[0] + "/" + parts[1];
  const std::string& verb = parts[2];
  const auto found = repos_.find(repo);
  if (found == repos_.end()) {
    return hub_error(401, "RepoNotFound",
                     "Repository Not Found for url: " + endpoint() + request.target + ".");
  }
  if (found->second.gated && !good_token) {
    return hub_error(403, "GatedRepo",
                     "Access to model " + repo + " is restricted. You must have access to it "
                     "and be authenticated to access it. Please log in.");
  }
  const std::string commit = commit_of(found->second, parts[3]);
  if (commit.empty()) return hub_error(404, "RevisionNotFound", "Invalid rev id: " + parts[3]);
  if (api && verb == "revision") {
    std::string body = R"({"_id":"fixture","id":)" + json_string(repo) + R"(,"sha":")" + commit +
                       R"(","siblings":[)";
    bool first = true;
    for (const auto& [name, file] : found->second.commits.at(commit)) {
      body += (first ? "" : ",") + std::string(R"({"rfilename":)") + json_string(name) + "}";
      first = false;
    }
    return Reply{200, body + "]}"};
  }
  if (api && verb == "tree") return tree(repo, commit, file_path, query, request.target);
  if (!api && verb == "resolve") return resolve(repo, commit, file_path, request);
  return hub_error(404, "", "Not Found");
}

HubFixtureServer::Reply HubFixtureServer::tree(const std::string& repo, const std::string& commit,
                                               const std::string& path, std::string_view query,
                                               const std::string& target) {
  const Tree& files = repos_.at(repo).commits.at(commit);
  const std::string prefix = path.empty() ? std::string() : path + "/";
  // Folders and files, each a JSON object, by path.
  std::map<std::string, std::string> entries;
  for (const auto& folder : folders_of(files)) {
    if (!folder.starts_with(prefix)) continue;
    entries[folder] = R"({"type":"directory","oid":"0000000000000000000000000000000000000000",)"
                      R"("size":0,"path":)" + json_string(folder) + "}";
  }
  for (const auto& [name, file] : files) {
    if (!name.starts_with(prefix)) continue;
    std::string entry = R"({"type":"file","oid":")" + file.oid + R"(","size":)" +
                        std::to_string(file.bytes->size()) + R"(,"path":)" + json_string(name);
    if (file.bytes->size() > options_.lfs_threshold) {
      entry += R"(,"lfs":{"oid":")" + file.sha256 + R"(","size":)" +
               std::to_string(file.bytes->size()) + R"(,"pointerSize":134})";
    }
    entries[name] = entry + "}";
  }
  if (!path.empty() && entries.empty()) {
    return hub_error(404, "EntryNotFound", path + " does not exist on \"" + commit + "\"");
  }
  const auto pairs = parse_pairs(query, false);
  std::size_t cursor = 0;
  if (const auto found = pairs.find("cursor"); found != pairs.end()) cursor = std::stoul(found->second);
  Reply reply{200, "["};
  std::size_t index = 0;
  for (const auto& [name, entry] : entries) {
    if (index >= cursor && index < cursor + options_.page_size) {
      reply.body += (index == cursor ? "" : ",") + entry;
    }
    ++index;
  }
  reply.body += "]";
  if (cursor + options_.page_size < entries.size()) {
    const std::string base = target.substr(0, target.find("&cursor="));
    reply.headers.emplace_back("Link", "<" + endpoint() + base + "&cursor=" +
                                           std::to_string(cursor + options_.page_size) +
                                           ">; rel=\"next\"");
  }
  return reply;
}

HubFixtureServer::Reply HubFixtureServer::resolve(const std::string& repo,
                                                  const std::string& commit,
                                                  const std::string& path,
                                                  const Request& request) {
  const Tree& files = repos_.at(repo).commits.at(commit);
  const auto found = files.find(path);
  if (found == files.end()) {
    return hub_error(404, "EntryNotFound", path + " does not exist on \"" + commit + "\"");
  }
  const File& file = found->second;
  if (file.bytes->size() <= options_.lfs_threshold) {
    Reply reply = file_reply(file.bytes, request.range, file.oid);
    reply.headers.emplace_back("X-Repo-Commit", commit);
    return reply;
  }
  Reply reply{302, "Found. Redirecting to the CDN", "text/plain; charset=utf-8"};
  reply.headers.emplace_back("Location", cdn_endpoint() + sign_locked(file));
  reply.headers.emplace_back("X-Repo-Commit", commit);
  reply.headers.emplace_back("X-Linked-Etag", "\"" + file.sha256 + "\"");
  reply.headers.emplace_back("X-Linked-Size", std::to_string(file.bytes->size()));
  return reply;
}

HubFixtureServer::Reply HubFixtureServer::cdn(const Request& request) {
  std::lock_guard lock(mutex_);
  cdn_log_.push_back(request);
  if (!request.authorization.empty()) {
    ++leaked_tokens_;
    return Reply{400, "Only one auth mechanism allowed", "text/plain"};
  }
  const auto [path, query] = split_target(request.target);
  const auto pairs = parse_pairs(query, false);
  const auto value = [&](const char* name) {
    const auto found = pairs.find(name);
    return found == pairs.end() ? std::string() : found->second;
  };
  const std::string blob(path.substr(std::min<std::size_t>(path.size(), 7)));
  const std::string id = value("Key-Pair-Id");
  const auto found = signed_.find(id);
  if (!path.starts_with("/repos/") || found == signed_.end() || found->second.sha256 != blob ||
      value("Signature") !=
          hex_digest(std::string(signing_secret) + id + blob + value("Expires"))) {
    return Reply{403, "<Error><Code>AccessDenied</Code></Error>", "application/xml"};
  }
  if (options_.cdn_url_uses > 0 && ++found->second.uses > options_.cdn_url_uses) {
    return Reply{403, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                 "application/xml"};
  }
  return file_reply(found->second.bytes, request.range, found->second.sha256);
}

}  // namespace tensorstream::testing
