#include "storage/hf/adapter.hpp"

#include <simdjson.h>

#include <string_view>

namespace tensorstream::hf {
namespace {

// What a request target names: "/api/models/ORG/NAME/VERB/..." or "/ORG/NAME/VERB/...", below
// the endpoint's path prefix.
struct HubTarget {
  std::string repo;  ///< "ORG/NAME"
  std::string verb;  ///< "revision", "tree" or "resolve"
};

HubTarget parse_target(std::string_view target, std::string_view endpoint) {
  const auto scheme_end = endpoint.find("://");
  const auto path = endpoint.find('/', scheme_end == std::string_view::npos ? 0 : scheme_end + 3);
  if (path != std::string_view::npos && target.starts_with(endpoint.substr(path))) {
    target.remove_prefix(endpoint.size() - path);
  }
  target = target.substr(0, target.find('?'));
  if (target.starts_with("/api/models/")) target.remove_prefix(11);
  if (!target.starts_with('/')) return {};
  const auto first = target.find('/', 1);
  if (first == std::string_view::npos) return {};
  const auto second = target.find('/', first + 1);
  HubTarget parsed{std::string(target.substr(1, second == std::string_view::npos ? second
                                                                                  : second - 1)),
                   {}};
  if (second != std::string_view::npos) {
    const auto third = target.find('/', second + 1);
    parsed.verb = target.substr(second + 1, third == std::string_view::npos
                                                ? third
                                                : third - second - 1);
  }
  return parsed;
}

// The Hub's own words: X-Error-Message, else the body's {"error": "..."}.
std::string hub_message(const Failure& failure) {
  if (const auto found = failure.headers.find("X-Error-Message"); found != failure.headers.end()) {
    return std::string(found->value());
  }
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(failure.body);
  std::string_view error;
  if (!failure.body.empty() && !parser.parse(padded)["error"].get(error)) {
    return std::string(error);
  }
  return {};
}

}  // namespace

Adapter::Adapter(std::optional<std::string> token, std::string token_source, std::string endpoint)
    : token_(std::move(token)),
      token_source_(std::move(token_source)),
      endpoint_(std::move(endpoint)) {}

boost::asio::awaitable<Authorization> Adapter::authorize(const RequestHead&) {
  if (!token_) co_return Authorization{};
  co_return Authorization{.headers = "Authorization: Bearer " + *token_ + "\r\n"};
}

void Adapter::interpret(Failure& failure) const {
  const std::string status = " (HTTP " + std::to_string(failure.status) + ")";
  const auto code_field = failure.headers.find("X-Error-Code");
  const std::string code =
      code_field == failure.headers.end() ? std::string() : std::string(code_field->value());
  const auto [repo, verb] = parse_target(failure.target, endpoint_);
  // A mirror (HF_ENDPOINT) may answer a bare 404 where the Hub says RevisionNotFound.
  const bool bare_not_found = failure.status == 404 && code.empty();
  // What was sent, for messages: "the token from HF_TOKEN", or why none was.
  const std::string sent = token_ ? "the token from " + token_source_
                                  : "no token was sent (" + token_source_ + ")";
  if (code == "GatedRepo") {
    failure.cause = "the repository is gated: accept its license at " + endpoint_ + "/" + repo +
                    " and use a token with access; " + sent + status;
  } else if (code == "RepoNotFound") {
    failure.cause = "no such repository " + repo + ", or a private one: " + sent + status;
    failure.not_found = true;
  } else if (code == "RevisionNotFound" || (bare_not_found && verb == "revision")) {
    failure.cause = "no such revision of " + repo + status;
    failure.not_found = true;
  } else if (code == "EntryNotFound") {
    failure.cause = "no such file in " + repo + status;
    failure.not_found = true;
  } else if (failure.status == 401) {
    const std::string message = hub_message(failure);
    failure.cause = (token_ ? "the Hub refused " : "the Hub wants a token: ") + sent +
                    (message.empty() ? std::string() : ": " + message) + status;
  } else if (const std::string message = hub_message(failure); !message.empty()) {
    failure.cause = message + status;
  }
  if (failure.not_found || failure.status == 401 || failure.status == 403) {
    failure.transient = false;
  }
}

}  // namespace tensorstream::hf
