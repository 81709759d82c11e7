#pragma once
/// @file
/// The exceptions tensorstream's public API throws. Every message says what failed and where
/// (the object's URL, the tensor's name, the option's name), so one line on stderr is enough.
///
/// Every failure is an Error, with one exception by design: cancellation. An operation that its
/// caller cancels through Asio (a cancellation slot, `co_await (streamer.next() || timer)`, a
/// stopped io_context) ends as Asio's own operations do, with boost::system::system_error holding
/// boost::asio::error::operation_aborted, so that Asio's awaitable operators and the caller's
/// handling of its other operations see one convention. Cancelled, below, is not that: it is work
/// withdrawn by its owner rather than by the caller's cancellation (a streamer destroyed under
/// next(), a stopped store server's load, a batched request withdrawn before it ran).

#include <stdexcept>
#include <string>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// What kind of failure an Error reports: what code that carries errors into another vocabulary
/// (the store server's wire protocol, Python's exceptions) goes by, instead of matching classes
/// or messages. Each exception class below has its kind; StorageError's may be not_found,
/// access_denied or storage.
enum class ErrorKind {
  other,              ///< An Error of none of the kinds below.
  invalid_argument,   ///< InvalidArgument.
  format,             ///< FormatError.
  storage,            ///< StorageError: a store failed, or refused for another reason.
  not_found,          ///< NotFoundError: the object or prefix does not exist.
  access_denied,      ///< StorageError: the store refused the caller (HTTP 401, 403, EACCES).
  credentials,        ///< CredentialsError: no credentials could be obtained.
  state,              ///< StateError.
  cancelled,          ///< Cancelled.
  deadline_exceeded,  ///< DeadlineExceeded.
};

/// The name of `kind` in the store server's protocol and in messages: "not_found",
/// "access_denied", and "error" for ErrorKind::other.
TENSORSTREAM_API
std::string_view error_kind_name(ErrorKind kind);

/// The kind error_kind_name() names `name`; ErrorKind::other for a name it does not give.
TENSORSTREAM_API
ErrorKind error_kind_from_name(std::string_view name);

/// Base of every exception thrown by tensorstream.
class TENSORSTREAM_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::other)
      : std::runtime_error(what), kind_(kind) {}

  /// What kind of failure this is.
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

/// An option, URL, environment variable or argument has an invalid value.
class TENSORSTREAM_API InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(what, ErrorKind::invalid_argument) {}
};

/// An object is not a well-formed safetensors file (header, dtype, shape or offsets).
class TENSORSTREAM_API FormatError : public Error {
 public:
  explicit FormatError(const std::string& what) : Error(what, ErrorKind::format) {}
};

/// Reading an object failed: HTTP status, I/O error, timeout, truncated body, refused connection.
class TENSORSTREAM_API StorageError : public Error {
 public:
  /// @param object URL or path of the object the operation was about.
  /// @param cause what went wrong, e.g. "HTTP 503 Service Unavailable".
  /// @param transient whether trying again may succeed (timeouts, resets, 5xx).
  /// @param kind ErrorKind::storage, or ErrorKind::access_denied for a refusal of the caller.
  StorageError(std::string object, std::string cause, bool transient = false,
               ErrorKind kind = ErrorKind::storage)
      : Error(object + ": " + cause, kind), object_(std::move(object)),
        cause_(std::move(cause)), transient_(transient) {}

  /// URL or path of the object.
  const std::string& object() const noexcept { return object_; }
  /// What went wrong, without the object's name.
  const std::string& cause() const noexcept { return cause_; }
  /// Whether the same request may succeed if retried.
  bool transient() const noexcept { return transient_; }

 private:
  std::string object_;
  std::string cause_;
  bool transient_;
};

/// The object or prefix does not exist (HTTP 404, ENOENT).
class TENSORSTREAM_API NotFoundError : public StorageError {
 public:
  NotFoundError(std::string object, std::string cause)
      : StorageError(std::move(object), std::move(cause), false, ErrorKind::not_found) {}
};

/// An operation was used in the wrong state, e.g. submitting to a batcher that is not running.
class TENSORSTREAM_API StateError : public Error {
 public:
  explicit StateError(const std::string& what) : Error(what, ErrorKind::state) {}
};

/// Work withdrawn by its owner before it finished: a streamer destroyed under next(), a store
/// server stopped during load(), a batched request withdrawn (ResultFuture::cancel(), stop()).
/// The caller's own Asio cancellation ends with system_error (operation_aborted); see above.
class TENSORSTREAM_API Cancelled : public Error {
 public:
  explicit Cancelled(const std::string& what) : Error(what, ErrorKind::cancelled) {}
};

/// A request's deadline passed before it was processed.
class TENSORSTREAM_API DeadlineExceeded : public Error {
 public:
  explicit DeadlineExceeded(const std::string& what) : Error(what, ErrorKind::deadline_exceeded) {}
};

}  // namespace tensorstream
