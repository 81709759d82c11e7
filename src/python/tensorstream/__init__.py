"""tensorstream: a model's weights from object storage straight into torch tensors.

A drop-in for the Python original's ``SafeTensorsStreamer`` and ``prefetch``, on tensorstream's
C++ engine: chunked parallel range reads from s3://, gs://, az://, http(s):// and local files, each
tensor yielded as soon as its bytes have landed, in bounded memory::

    from tensorstream import SafeTensorsStreamer

    for name, tensor in SafeTensorsStreamer("s3://models/llama/", "/srv/model").get_tensors():
        ...

Also: ``async for`` over a streamer on an asyncio loop, inspect() for headers,
load_into_module() for a ``torch.nn.Module``, tensorstream.store.attach() for a store server's
shared memory, and tensorstream.vllm, a model loader for vLLM. Errors are the exceptions of
tensorstream.errors, each also a built-in one (FileNotFoundError, ValueError, PermissionError,
OSError).
"""

from __future__ import annotations

import atexit

from . import _built_for, _interpreter

# torch first: the extension hands tensors to its Python classes, which importing torch sets up.
_interpreter.import_torch(_built_for.python, _built_for.python_version, _built_for.torch_version)

from . import _tensorstream, errors, store
from .errors import (AccessDeniedError, CancelledError, CredentialsError,
                     DeadlineExceededError, Error, FormatError, InvalidArgumentError,
                     NotFoundError, StateError, StorageError)
from .loading import LoadReport, load_into_module, load_into_tensors
from .model import (FileHeader, ModelLoaderConfig, PrefetchResult, TensorInfo, inspect,
                    model_loader_config, prefetch)
from .streamer import SafeTensorsStreamer, _live

__version__ = "0.1.0"

__all__ = [
    "SafeTensorsStreamer", "prefetch", "inspect", "load_into_module", "load_into_tensors",
    "model_loader_config", "LoadReport", "PrefetchResult", "FileHeader", "TensorInfo",
    "ModelLoaderConfig", "errors", "store", "Error", "StorageError", "NotFoundError",
    "AccessDeniedError", "CredentialsError", "FormatError", "InvalidArgumentError", "StateError",
    "CancelledError", "DeadlineExceededError",
]


@atexit.register
def _close_live_streamers() -> None:
    # A wait completes on the extension's thread, which calls into Python, and a stream runs
    # threads of its own: none may be left when the interpreter shuts down. No stream or wait
    # starts from here on (threads that still run get a StateError), then every live one ends.
    _tensorstream._begin_shutdown()
    for streamer in list(_live):
        streamer.close()
