"""Attaching to a store server (``tensorstream serve``): a worker's rank as torch tensors over the
server's shared memory, without a copy."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Optional, Union

import torch

from . import _tensorstream

__all__ = ["AttachedRank", "attach"]


@dataclasses.dataclass(frozen=True)
class AttachedRank:
    """One rank of a store server, mapped into this process.

    ``weights`` and ``kv_cache`` map tensor names to CPU tensors over the server's memory: no
    copy. Each tensor keeps the mappings alive, so they stay valid after this object, and the
    server, are gone. Writes to ``kv_cache`` tensors are the server's memory, seen by every
    worker of the rank. ``kv_cache_info`` describes the paged cache (num_layers, num_blocks,
    block_size, kv_heads, head_dim, dtype), or is None when the server serves none.
    ``generation`` says which of the server's loads the rank comes from: 1, then one more for
    each reload (``tensorstream reload``, SIGHUP); what is mapped stays that generation's.
    """

    socket: str
    rank: int
    tensor_parallel_size: int
    generation: int
    model: str
    config: Dict[str, Any]
    fused: bool
    weights: Dict[str, torch.Tensor]
    kv_cache: Dict[str, torch.Tensor]
    kv_cache_info: Optional[Dict[str, Any]]


def attach(socket: Union[str, "os.PathLike[str]"], rank: int, timeout: float = 60.0,
           private_weights: bool = True, server_uid: Optional[int] = None) -> AttachedRank:
    """Attaches to ``rank`` of the store server listening on the Unix socket ``socket``,
    waiting up to ``timeout`` seconds in all: for the server to come up (no socket yet, or
    too busy to take the connection) and then for the rank to finish loading.

    The weights are sealed read-only memory on the server. With ``private_weights`` (the
    default) they are mapped copy-on-write: they behave as ordinary tensors, and an in-place
    operation on one changes this process's copy of the pages it touches, never the server's.
    ``private_weights=False`` maps them read-only, where such an operation kills the process
    with SIGSEGV, which Python cannot catch; use it only where nothing writes to weights.

    The server must run as this process's user or as root, or as ``server_uid`` where given,
    and hand out memory sealed as a store server seals it; anything else answering on the
    socket is refused with PermissionError.

    Raises StorageError when no server took the request within the timeout (or the
    connection fails), the server's error
    as its exception (InvalidArgumentError for a rank it does not serve,
    DeadlineExceededError for a rank not loaded in time, ...), FormatError for a reply that is
    not a valid manifest.
    """
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"rank must be an int, not {type(rank).__name__}")
    reply = _tensorstream._attach(os.fspath(socket), rank, float(timeout), bool(private_weights),
                                  server_uid)
    config = json.loads(reply.pop("config_json") or "{}")
    return AttachedRank(config=config, **reply)
