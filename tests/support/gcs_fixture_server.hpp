#pragma once
// A stand-in for Google Cloud Storage, since no GCS emulator can be installed here: the pieces of
// the JSON API, the OAuth 2.0 token endpoint and the metadata server that GcsStore and the token
// providers use, as Google documents them.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// An HTTP/1.1 server on an ephemeral 127.0.0.1 port, running in its own thread, holding buckets
/// of in-memory objects. It serves, with keep-alive:
///
/// - `GET /storage/v1/b/BUCKET/o/OBJECT` (metadata; "size" and "generation" are decimal strings)
///   and with `?alt=media` (the bytes: 206 for `Range: bytes=a-b`, 416 past the end, 200 without
///   Range; an `x-goog-generation` header; 412 "conditionNotMet" when `ifGenerationMatch` names
///   another generation). OBJECT must be fully percent-encoded: a raw '/' in it gets 404, as
///   from GCS. Every put() makes a new generation, as an upload to GCS does.
/// - `GET /storage/v1/b/BUCKET/o?prefix=&delimiter=&pageToken=`: names in byte order,
///   `prefixes` with a delimiter, `page_size` entries per page and a `nextPageToken` that needs
///   percent-encoding. `fields` is ignored: responses hold whole resources.
/// - `POST /upload/storage/v1/b/BUCKET/o?uploadType=media&name=OBJECT`: the body becomes the
///   object, under a new generation; answered with the object resource.
/// - Resumable uploads: `POST ...?uploadType=resumable&name=OBJECT` opens a session, answered 200
///   with its URI in `Location` (the request's URI with `&upload_id=ID`). A `PUT` of that URI
///   with `Content-Range: bytes a-b/*` appends the body (bytes already persisted are skipped;
///   a gap is a 400), persists only a multiple of 256 KiB of it and answers 308 Resume
///   Incomplete with `Range: bytes=0-N` (no Range while nothing is persisted). `bytes a-b/TOTAL`
///   persists everything and, once TOTAL bytes are there, creates the object under a new
///   generation (200 and the object resource, also to every later PUT). `bytes */*` and
///   `bytes */TOTAL` ask for the status (the latter completes the upload when all bytes are
///   there). `DELETE` cancels the session (499); unknown sessions are 404.
/// - `POST /token`: the JWT bearer grant of the configured service account, whose RS256
///   signature and claims (iss, scope devstorage.read_only or read_write, aud = token_uri(), iat,
///   exp at most an hour later) are verified (uploads with a read_only token get 403 "Provided
///   scope(s) are not authorized"), and the refresh_token grant of the configured authorized
///   user. Errors are OAuth error bodies with Google's messages.
/// - `GET /computeMetadata/v1/instance/service-accounts/default/token` with
///   `Metadata-Flavor: Google`.
///
/// Storage requests need `Authorization: Bearer T` with a token T this server issued (401
/// "Invalid Credentials" otherwise), except for public buckets and when `require_token` is off.
/// Errors are GCS's JSON error bodies, e.g. 404 "No such object: BUCKET/OBJECT".
class GcsFixtureServer {
 public:
  /// Who may get tokens, and the faults to inject.
  struct Options {
    /// Entries, objects and prefixes together, per listing page; small, so that pages are
    /// followed.
    std::size_t page_size = 2;
    /// false: accept storage requests without a token, as emulators do.
    bool require_token = true;
    /// The service account whose JWTs the token endpoint accepts.
    std::string service_account = "loader@tensorstream-tests.iam.gserviceaccount.com";
    /// Its public key (PEM); no JWT is accepted while empty.
    std::string service_account_public_key{};
    /// The authorized user whose refresh token the token endpoint accepts.
    std::string client_id = "tensorstream-client.apps.googleusercontent.com";
    std::string client_secret = "tensorstream-client-secret";
    std::string refresh_token = "tensorstream-refresh-token";
    /// expires_in of the tokens issued, in seconds.
    int token_lifetime = 3600;
    /// Answer the first K media downloads with `fail_status` and a JSON error body.
    int fail_media_first = 0;
    unsigned fail_status = 503;
    /// Answer the first K token grants with `fail_status`, as an overloaded token endpoint does.
    int fail_token_first = 0;
    /// Answer the first K upload requests (media uploads, session starts, chunks and status
    /// queries; not cancellations) with `upload_fail_status` and GCS's JSON error for it.
    int fail_upload_first = 0;
    unsigned upload_fail_status = 503;
    /// Answer the first K chunks that carry bytes with `upload_fail_status`, persisting none.
    int fail_chunks_first = 0;
    /// Of the first K chunks that carry at least 512 KiB, persist only the first half (a
    /// multiple of 256 KiB), then close the connection without an answer, as when a connection
    /// breaks mid-chunk.
    int cut_chunks_first = 0;
    /// Complete the first K uploads whose last chunk (or status query) brings every byte, but
    /// never answer that request (the connection stays open until the client closes it), and
    /// answer every later request of their sessions with `upload_fail_status`: a completion
    /// whose answer was lost and whose retries fail.
    int lose_completions_first = 0;
    /// Called with every upload request before it is answered, on the server's thread, with
    /// the server locked: it may only look at the request and post work elsewhere.
    std::function<void(const std::string& method, const std::string& content_range)> on_upload{};
  };

  /// One request as received.
  struct Request {
    std::string method;
    std::string target;         ///< As sent, percent-encoding kept.
    std::string authorization;  ///< Empty when absent.
    std::string range;          ///< Empty when absent.
    std::string metadata_flavor;  ///< Empty when absent.
    std::string content_range;    ///< Empty when absent.
    std::string body;
  };

  /// Starts serving, with no buckets.
  explicit GcsFixtureServer(Options options);

  GcsFixtureServer(const GcsFixtureServer&) = delete;
  GcsFixtureServer& operator=(const GcsFixtureServer&) = delete;

  /// Stores `bytes` as object `name` of `bucket`, creating the bucket, under a new generation,
  /// which it returns.
  std::int64_t put(const std::string& bucket, const std::string& name, std::string bytes);

  /// Stores every file directly in `directory` as `prefix` + its name in `bucket`.
  void put_directory(const std::string& bucket, const std::string& prefix,
                     const std::filesystem::path& directory);

  /// Lets anyone read `bucket` without a token, creating it.
  void make_public(const std::string& bucket);

  /// "http://127.0.0.1:PORT".
  std::string endpoint() const;

  /// The port, on 127.0.0.1.
  std::uint16_t port() const { return listener_.port(); }

  /// "127.0.0.1:PORT", as STORAGE_EMULATOR_HOST and GCE_METADATA_HOST take it.
  std::string host() const;

  /// endpoint() + "/token".
  std::string token_uri() const;

  /// A new token that storage requests accept, as the token endpoint would issue it.
  std::string issue_token();

  /// Every request received so far, in order.
  std::vector<Request> requests() const;

  /// The bytes of object `name` of `bucket`; nullopt when there is none.
  std::optional<std::string> stored(const std::string& bucket, const std::string& name) const;

  /// The resumable upload sessions that were opened and neither completed nor cancelled.
  std::size_t unfinished_sessions() const;

 /// What the server answers to one request (defined with the server).
  struct Reply;

 private:

  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  Reply answer(const Request& request);
  Reply storage(std::string_view path, std::string_view query, const Request& request);
  Reply object(const std::string& bucket, const std::string& name, std::string_view query,
               const Request& request);
  Reply list(const std::string& bucket, std::string_view query);
  std::optional<Reply> check_token(const std::string& bucket, const Request& request) const;
  Reply upload(std::string_view path, std::string_view query, const Request& request);
  Reply chunk(const std::string& id, const Request& request);
  std::int64_t store(const std::string& bucket, const std::string& name, std::string bytes);
  Reply token_grant(const Request& request);
  Reply token_reply(bool read_only = false);
  // Sets `read_only` for an assertion of the devstorage.read_only scope.
  std::optional<Reply> verify_assertion(const std::string& assertion, bool& read_only) const;

  struct Object {
    std::string bytes;
    std::int64_t generation = 0;
  };

  // A resumable upload session.
  struct Session {
    std::string bucket;
    std::string name;
    std::string persisted;
    bool completed = false;
    bool answer_lost = false;  // Completed by a request left unanswered (lose_completions_first).
  };

  const Options options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, Object>> buckets_;
  std::int64_t last_generation_ = 0;
  std::set<std::string> public_buckets_;
  std::set<std::string> tokens_;
  std::set<std::string> read_only_tokens_;  // Issued for devstorage.read_only: no uploads.
  int media_requests_ = 0;
  int token_requests_ = 0;
  int upload_requests_ = 0;
  int cut_chunks_ = 0;
  int failed_chunks_ = 0;
  int lost_completions_ = 0;
  std::map<std::string, Session> sessions_;
  int last_session_ = 0;
  std::vector<Request> requests_;
  LoopbackListener listener_;
};

/// The JSON of a service account key file for `client_email` with `private_key` (PEM), whose
/// tokens come from `token_uri`.
std::string service_account_key_file(const std::string& client_email,
                                     const std::string& private_key,
                                     const std::string& token_uri);

}  // namespace tensorstream::testing
