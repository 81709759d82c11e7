"""The keyword options the Python API accepts, checked before they reach the C++ core."""

from __future__ import annotations

from typing import Any

# Options of the object stores, shared by SafeTensorsStreamer, inspect() and prefetch().
STORE_OPTIONS = {
    "endpoint_url": "service endpoint of s3://, gs://, az:// or hf:// (a Hub mirror), e.g. "
    "'http://127.0.0.1:9000'",
    "account": "Azure storage account of az:// URLs (default: the connection string's, else "
    "AZURE_STORAGE_ACCOUNT)",
    "hf_token": "Hugging Face token of hf:// URLs (default: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, "
    "else the token file)",
    "region": "region s3:// requests are signed for",
    "addressing": "where an s3:// bucket goes: 'auto', 'virtual' or 'path'",
    "anonymous": "send unsigned requests, for public buckets and containers",
    "ca_bundle": "PEM file of the certificate authorities trusted for https",
    "verify": "verify the server's certificate (default True)",
    "connect_timeout": "seconds to connect (TCP and TLS)",
    "response_timeout": "seconds a request waits for its response header before it is retried",
    "read_timeout": "seconds a response body may go without a byte before it is retried",
    "max_retries": "retries of a transient failure",
    "use_io_uring": "read local files through io_uring (default True)",
    "direct_io": "read local files past the page cache: 'auto' (files mostly not cached), 'on' "
    "or 'off' (default: TENSORSTREAM_DIRECT_IO, else 'auto')",
    "cache_dir": "keep what is read in this directory and read it from there next time, "
    "verified (default: TENSORSTREAM_CACHE_DIR, else no cache; docs/cache.md)",
    "cache_size": "most bytes the cache takes (default: TENSORSTREAM_CACHE_SIZE, else no bound)",
    "cache_mode": "'readwrite', 'read', 'offline' or 'off' (default: TENSORSTREAM_CACHE_MODE, "
    "else 'readwrite')",
    "cache_min_free": "what stays free on the cache's disk: bytes, or a str such as '5GiB' or "
    "'10%' (default: TENSORSTREAM_CACHE_MIN_FREE, else 10% or 5GiB, whichever is less)",
}


def check_store_options(function: str, options: dict[str, Any]) -> None:
    """Raises TypeError, as Python does for any unexpected keyword, naming the accepted ones."""
    unknown = sorted(set(options) - set(STORE_OPTIONS))
    if unknown:
        raise TypeError(
            f"{function}() got an unexpected keyword argument {unknown[0]!r}; store options are "
            + ", ".join(STORE_OPTIONS))
