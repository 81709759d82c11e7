"""SafeTensorsStreamer: a checkpoint's tensors, streamed from object storage into torch tensors."""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any, AsyncIterator, Iterator, Optional, Tuple, Union

import torch

from . import _tensorstream
from ._options import check_store_options

__all__ = ["SafeTensorsStreamer"]

# Every streamer not yet closed, so that the interpreter's exit closes them (see __init__.py):
# their waits complete on a thread that must not call into an interpreter shutting down.
_live: "weakref.WeakSet[SafeTensorsStreamer]" = weakref.WeakSet()


def _settle(future: asyncio.Future, result: Any, error: Optional[BaseException]) -> None:
    if future.done():  # cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class SafeTensorsStreamer:
    """Streams the tensors of a safetensors checkpoint into CPU ``torch.Tensor`` objects, each
    yielded as soon as its bytes have landed (not in file order), while the downloads go on.

    A drop-in for the Python original's ``SafeTensorsStreamer``, with its arguments, environment
    variables and file selection::

        streamer = SafeTensorsStreamer("s3://models/llama/", "/srv/model")
        for name, tensor in streamer.get_tensors():
            state[name].copy_(tensor)

    or, on a running event loop, without blocking it::

        async for name, tensor in SafeTensorsStreamer("s3://models/llama/"):
            ...

    ``remote_path`` is a file, an index (``model.safetensors.index.json``) or a prefix, on
    ``s3://``, ``gs://``, ``http(s)://``, ``file://`` or a local path. ``local_path`` is kept for
    the loader around the stream (where config.json and the tokenizer go); the stream does not
    touch it. ``chunk_size`` (bytes per range read) and ``max_concurrency`` (reads in flight) left
    as None come from ``TENSORSTREAM_CHUNK_SIZE`` / ``TENSORSTREAM_MAX_CONCURRENCY``, else
    ``FLYTE_MODEL_LOADER_CHUNK_SIZE`` / ``FLYTE_MODEL_LOADER_MAX_CONCURRENCY``, else 16 MiB and
    32. With ``tensor_parallel_size`` > 1 the rank's files ``model-rank-{rank}-part-*.safetensors``
    are streamed (or a TRAW partition's ``TP{n}/shard{rank}/``).

    ``memory_limit`` (bytes, default 512 MiB) bounds the memory the stream holds: reads in flight
    and tensors ready but not yet taken. A consumer that does not keep up stalls the downloads;
    tensors it has taken no longer count, so ``dict(streamer.get_tensors())`` works whatever the
    model's size. ``memory_accounting="until_released"`` makes it a hard cap on all tensor memory,
    kept tensors included. ``read_order`` is ``"smallest_first"`` (default) or ``"file_order"``;
    ``io_threads`` is the number of threads running the I/O. The keyword arguments left
    (``**store_options``: endpoint_url, account, region, addressing, anonymous, ca_bundle, verify,
    connect_timeout, response_timeout, read_timeout, max_retries, use_io_uring, direct_io,
    cache_dir, cache_size, cache_mode) configure the object stores and the local cache.

    Tensors share the memory the bytes landed in: no copy is made, and the memory returns to the
    stream (or is freed) when the last reference to a tensor goes. They stay valid after the
    streamer is closed. The GIL is released while the library waits or works.

    Raises (at construction, or when iterating) the exceptions of :mod:`tensorstream.errors`:
    ``NotFoundError`` (a ``FileNotFoundError``) for a missing object, ``FormatError`` (a
    ``ValueError``) for a malformed checkpoint, ``InvalidArgumentError`` (a ``ValueError``) for a
    bad option, ``AccessDeniedError``/``CredentialsError`` (``PermissionError``) when refused,
    ``StorageError`` (an ``OSError``) for other failures.
    """

    def __init__(
        self,
        remote_path: Union[str, "os.PathLike[str]"],
        local_path: Union[str, "os.PathLike[str]"] = "/srv/model",
        chunk_size: Optional[int] = None,
        max_concurrency: Optional[int] = None,
        rank: int = 0,
        tensor_parallel_size: int = 1,
        memory_limit: Optional[int] = None,
        *,
        memory_accounting: Optional[str] = None,
        read_order: Optional[str] = None,
        io_threads: Optional[int] = None,
        **store_options: Any,
    ) -> None:
        check_store_options("SafeTensorsStreamer", store_options)
        options = dict(store_options, chunk_size=chunk_size, max_concurrency=max_concurrency,
                       rank=rank, tensor_parallel_size=tensor_parallel_size,
                       memory_limit=memory_limit, memory_accounting=memory_accounting,
                       read_order=read_order, io_threads=io_threads)
        self._impl = _tensorstream._Streamer(os.fspath(remote_path), os.fspath(local_path), options)
        _live.add(self)

    @property
    def remote_path(self) -> str:
        """The path given at construction."""
        return self._impl.remote_path

    @property
    def local_path(self) -> str:
        """The local path given at construction."""
        return self._impl.local_path

    @property
    def closed(self) -> bool:
        """Whether close() was called (or the stream was cancelled)."""
        return self._impl.closed

    def stats(self) -> dict:
        """The stream's counters: tensors and bytes so far and in total, elapsed_seconds,
        first_tensor_seconds, requests, retries, connections, peak_memory, fresh_memory (bytes
        of tensor memory mapped afresh rather than recycled), io_mode, gigabytes_per_second."""
        return self._impl.stats()

    def get_tensors(self) -> Iterator[Tuple[str, torch.Tensor]]:
        """A generator of ``(name, tensor)`` for every remaining tensor, as each completes.

        Blocks between tensors with the GIL released (Ctrl-C interrupts it); downloads continue
        while the loop body runs. Single pass: tensors a loop has taken are not yielded again.
        """
        while True:
            item = self._impl.next()
            if item is None:
                return
            yield item
            # Not held while waiting for the next: a tensor released early is memory the
            # stream reuses instead of mapping fresh pages.
            del item

    def __iter__(self) -> Iterator[Tuple[str, torch.Tensor]]:
        return self.get_tensors()

    def __aiter__(self) -> AsyncIterator[Tuple[str, torch.Tensor]]:
        return self

    async def __anext__(self) -> Tuple[str, torch.Tensor]:
        """The next ``(name, tensor)``, awaited on the running loop without blocking it: the
        library's thread wakes the loop when the tensor is there (no polling, no thread per wait).

        Cancelling the awaiting task cancels the stream, as it finalises an async generator:
        outstanding requests stop, their memory is released, and the streamer is closed. A
        streamer closed by someone else meanwhile raises tensorstream.CancelledError here.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def on_done(result: Any, error: Optional[BaseException]) -> bool:
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
                return True
            except RuntimeError:  # the loop is closed: the stream keeps the tensor
                return False

        self._impl.next_async(on_done)
        try:
            item = await future
        except asyncio.CancelledError:
            self.close()
            raise
        if item is None:
            raise StopAsyncIteration
        return item

    def close(self) -> None:
        """Ends the stream: outstanding requests are cancelled and their memory released.
        Tensors already yielded stay valid. Calling it again does nothing."""
        self._impl.close()
        _live.discard(self)

    async def aclose(self) -> None:
        """close(), for ``async with`` and contextlib.aclosing."""
        self.close()

    def __enter__(self) -> "SafeTensorsStreamer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> "SafeTensorsStreamer":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"SafeTensorsStreamer({self.remote_path!r}, {self.local_path!r}) <{state}>"
