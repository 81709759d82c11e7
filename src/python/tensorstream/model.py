"""Reading a checkpoint's headers, prefetching a model's other artifacts, and the model loader's
environment."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _tensorstream
from ._options import check_store_options

__all__ = ["TensorInfo", "FileHeader", "inspect", "PrefetchResult", "prefetch",
           "ModelLoaderConfig", "model_loader_config"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors header: its dtype name ("BF16"), shape, and byte offsets
    relative to the file's data region, as the header writes them."""

    dtype: str
    shape: Tuple[int, ...]
    data_offsets: Tuple[int, int]


@dataclasses.dataclass(frozen=True)
class FileHeader:
    """The validated header of one file a stream would read."""

    url: str
    size: int
    data_start: int
    metadata: Dict[str, str]
    tensors: Dict[str, TensorInfo]


def inspect(remote_path: PathLike, *, max_concurrency: Optional[int] = None,
            rank: int = 0, tensor_parallel_size: int = 1,
            **store_options: Any) -> List[FileHeader]:
    """The headers of the files a SafeTensorsStreamer of ``remote_path`` would read, in stream
    order, each with the tensors it would load from that file; reads no tensor data."""
    check_store_options("inspect", store_options)
    options = dict(store_options, max_concurrency=max_concurrency, rank=rank,
                   tensor_parallel_size=tensor_parallel_size)
    return [
        FileHeader(url=file["url"], size=file["size"], data_start=file["data_start"],
                   metadata=dict(file["metadata"]),
                   tensors={name: TensorInfo(**tensor) for name, tensor in file["tensors"].items()})
        for file in _tensorstream._inspect(os.fspath(remote_path), options)
    ]


@dataclasses.dataclass(frozen=True)
class PrefetchResult:
    """What prefetch() copied: paths relative to the local directory, sorted, and their bytes."""

    files: List[str]
    bytes: int


def prefetch(remote_path: PathLike, local_path: PathLike, exclude_safetensors: bool = True,
             **store_options: Any) -> PrefetchResult:
    """Copies every object under the prefix ``remote_path`` into the directory ``local_path``
    (config.json, tokenizer files, ...), keeping relative paths; with ``exclude_safetensors``
    the ``*.safetensors`` files are skipped, as they are streamed instead. Each file appears under
    its name only once complete. Needs a store that can list (s3://, gs://, az://, file://)."""
    check_store_options("prefetch", store_options)
    result = _tensorstream._prefetch(os.fspath(remote_path), os.fspath(local_path),
                                     bool(exclude_safetensors), store_options)
    return PrefetchResult(files=list(result["files"]), bytes=result["bytes"])


@dataclasses.dataclass(frozen=True)
class ModelLoaderConfig:
    """The model loader's settings from the environment: each from ``TENSORSTREAM_<NAME>``, else
    ``FLYTE_MODEL_LOADER_<NAME>``, else its default."""

    remote_model_path: Optional[str]
    local_model_path: str
    chunk_size: int
    max_concurrency: int
    stream_safetensors: bool


def model_loader_config() -> ModelLoaderConfig:
    """The settings the process environment gives now. Raises InvalidArgumentError (a
    ValueError) naming the variable for a malformed number."""
    return ModelLoaderConfig(**_tensorstream._model_loader_config())
