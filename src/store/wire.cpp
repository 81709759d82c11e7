#include "store/wire.hpp"

#include <simdjson.h>

#include <cstdint>
#include <limits>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

// An optional non-negative integer member no larger than `max`.
bool read_count(const simdjson::dom::object& request, std::string_view key, std::uint64_t max,
                std::uint64_t& value) {
  simdjson::dom::element member;
  if (request[key].get(member) == simdjson::NO_SUCH_FIELD) return false;
  if (member.get_uint64().get(value) != simdjson::SUCCESS || value > max) {
    throw InvalidArgument(json_string(key) + " must be an integer from 0 to " +
                          std::to_string(max));
  }
  return true;
}

}  // namespace

Request parse_request(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::element document;
  if (parser.parse(padded).get(document) != simdjson::SUCCESS) {
    throw InvalidArgument("the request is not valid JSON");
  }
  simdjson::dom::object request;
  if (document.get_object().get(request) != simdjson::SUCCESS) {
    throw InvalidArgument("the request is not a JSON object");
  }
  simdjson::dom::element op_member;
  if (request["op"].get(op_member) == simdjson::NO_SUCH_FIELD) {
    throw InvalidArgument("the request has no \"op\"");
  }
  std::string_view op;
  if (op_member.get_string().get(op) != simdjson::SUCCESS) {
    throw InvalidArgument("\"op\" must be a string");
  }
  Request parsed;
  if (op == "status") {
    parsed.op = Operation::status;
    return parsed;
  }
  if (op == "reload") {
    parsed.op = Operation::reload;
    simdjson::dom::element source;
    if (request["source"].get(source) == simdjson::NO_SUCH_FIELD) return parsed;
    std::string_view text;
    if (source.get_string().get(text) != simdjson::SUCCESS || text.empty()) {
      throw InvalidArgument("\"source\" must be a non-empty string");
    }
    parsed.source = std::string(text);
    return parsed;
  }
  if (op != "attach") {
    throw InvalidArgument("unknown op " + json_string(op) +
                          " (expected \"attach\", \"status\" or \"reload\")");
  }
  parsed.op = Operation::attach;
  std::uint64_t rank = 0;
  if (!read_count(request, "rank", std::numeric_limits<std::uint32_t>::max(), rank)) {
    throw InvalidArgument("attach needs \"rank\"");
  }
  parsed.rank = static_cast<std::uint32_t>(rank);
  std::uint64_t timeout = 0;
  if (read_count(request, "timeout_ms", static_cast<std::uint64_t>(max_attach_timeout.count()),
                 timeout)) {
    parsed.timeout = std::chrono::milliseconds(timeout);
  }
  return parsed;
}

std::string error_reply(std::string_view message, ErrorKind kind, bool transient) {
  std::string reply = "{\"error\":";
  append_json_string(reply, message);
  reply += ",\"kind\":";
  append_json_string(reply, error_kind_name(kind));
  reply += transient ? ",\"transient\":true}" : ",\"transient\":false}";
  return reply;
}

std::string unavailable_reply(std::string_view message) {
  std::string reply = error_reply(message, ErrorKind::storage, true);
  reply.insert(reply.size() - 1, ",\"unavailable\":true");
  return reply;
}

std::string error_reply(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const StorageError& e) {
    return error_reply(e.what(), e.kind(), e.transient());
  } catch (const Error& e) {
    return error_reply(e.what(), e.kind());
  } catch (const std::exception& e) {
    return error_reply(e.what(), ErrorKind::other);
  } catch (...) {
    return error_reply("the handler threw a non-standard exception", ErrorKind::other);
  }
}

void throw_error_reply(const std::string& socket_path, std::string_view message,
                       std::string_view kind_name, bool transient) {
  const std::string text(message);
  const std::string full = socket_path + ": " + text;
  switch (const ErrorKind kind = error_kind_from_name(kind_name)) {
    case ErrorKind::invalid_argument:
      throw InvalidArgument(full);
    case ErrorKind::format:
      throw FormatError(full);
    case ErrorKind::not_found:
      throw NotFoundError(socket_path, text);
    case ErrorKind::storage:
    case ErrorKind::access_denied:
      throw StorageError(socket_path, text, transient, kind);
    case ErrorKind::state:
      throw StateError(full);
    case ErrorKind::cancelled:
      throw Cancelled(full);
    case ErrorKind::deadline_exceeded:
      throw DeadlineExceeded(full);
    case ErrorKind::credentials:
    case ErrorKind::other:
      // A CredentialsError's service and provider are the server's: its message names them.
      throw Error(full, kind);
  }
  throw Error(full);
}

}  // namespace tensorstream::store
