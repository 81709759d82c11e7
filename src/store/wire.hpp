#pragma once
// The JSON side of the protocol: parsing requests, writing and reading error replies.

#include <exception>
#include <string>
#include <string_view>

#include "tensorstream/error.hpp"
#include "tensorstream/store/protocol.hpp"

namespace tensorstream::store {

/// Parses and validates a request's JSON text; `peer` is left empty.
/// @throws InvalidArgument naming what is wrong, worded for the client.
Request parse_request(std::string_view json);

/// `{"error":message,"kind":"<error_kind_name(kind)>","transient":transient}`.
std::string error_reply(std::string_view message, ErrorKind kind, bool transient = false);

/// The error reply for an exception a handler threw: its message, its kind, and for a
/// StorageError whether it is transient.
std::string error_reply(const std::exception_ptr& error);

/// The error reply to a connection the server turns away before taking its request (too many
/// connections): transient, and marked "unavailable" so that a client tries again
/// (ServerUnavailable).
std::string unavailable_reply(std::string_view message);

/// Throws the tensorstream exception an error reply of `kind_name` (error_kind_name()) stands
/// for, its message `socket_path: message`; a StorageError keeps `transient`.
[[noreturn]] void throw_error_reply(const std::string& socket_path, std::string_view message,
                                    std::string_view kind_name, bool transient);

}  // namespace tensorstream::store
