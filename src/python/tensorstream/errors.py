"""The exceptions tensorstream raises.

Each is also the built-in exception a Python user would catch for the same failure, so code
written for files and for other loaders keeps working::

    NotFoundError          FileNotFoundError   a missing object, prefix or file (HTTP 404, ENOENT)
    AccessDeniedError      PermissionError     the store refused the request (HTTP 401, 403)
    CredentialsError       PermissionError     no credentials could be found or fetched
    StorageError           OSError             any other failure to read: HTTP errors, timeouts,
                                               truncated bodies, unreachable hosts
    FormatError            ValueError          a malformed checkpoint (header, dtype, offsets)
    InvalidArgumentError   ValueError          a bad option, URL or environment variable
    StateError             RuntimeError        a call in the wrong state (a closed streamer)
    CancelledError         RuntimeError        work withdrawn by its owner (closed under a wait)
    DeadlineExceededError  TimeoutError        a store server's rank not ready in time

All derive from :class:`Error`. The message is the one line the command-line tool prints after
``tensorstream: error:``: what failed, and where (the object's URL, the tensor, the option).
"""

from __future__ import annotations

__all__ = [
    "Error", "StorageError", "NotFoundError", "AccessDeniedError", "CredentialsError",
    "FormatError", "InvalidArgumentError", "StateError", "CancelledError", "DeadlineExceededError",
]


class Error(Exception):
    """Base of every exception tensorstream raises."""


class StorageError(Error, OSError):
    """Reading an object failed.

    Attributes: ``object`` (its URL or path), ``cause`` (what went wrong, e.g. ``"HTTP 503
    Service Unavailable"``) and ``transient`` (whether trying again may succeed; the library has
    already retried such failures before raising).
    """

    object: str = ""
    cause: str = ""
    transient: bool = False


class NotFoundError(StorageError, FileNotFoundError):
    """The object or prefix does not exist (HTTP 404, ENOENT)."""


class AccessDeniedError(StorageError, PermissionError):
    """The store refused the request (HTTP 401, 403): credentials without access, or none."""


class CredentialsError(Error, PermissionError):
    """No credentials could be obtained for the store.

    Attributes: ``service`` ("AWS" or "Google"), ``provider`` (the source that failed) and
    ``cause``.
    """

    service: str = ""
    provider: str = ""
    cause: str = ""


class FormatError(Error, ValueError):
    """An object is not a well-formed safetensors (or TRAW) file."""


class InvalidArgumentError(Error, ValueError):
    """An option, URL, environment variable or argument has an invalid value."""


class StateError(Error, RuntimeError):
    """An operation was used in the wrong state, e.g. next() on a closed streamer."""


class CancelledError(Error, RuntimeError):
    """Work withdrawn by its owner, e.g. a streamer closed while another thread waited on it."""


class DeadlineExceededError(Error, TimeoutError):
    """A deadline passed, e.g. a store server's rank not loaded within the attach timeout."""
