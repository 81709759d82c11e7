"""A vLLM model loader that streams the weights, in the shape of the Python original's
``flyte-vllm-streaming`` loader.

    import tensorstream.vllm
    tensorstream.vllm.register()          # then: vllm serve ... --load-format flyte-vllm-streaming

The loader reads the model loader's environment (``FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH``,
``..._LOCAL_MODEL_PATH``, ``..._CHUNK_SIZE``, ``..._MAX_CONCURRENCY``, or their
``TENSORSTREAM_*`` twins):

* ordinary path (one tensor-parallel rank): vLLM's own loading, fed by a stream of the remote
  path, each tensor yielded as ``source.prefix + name``; when no streamer can be made (no remote
  path, a bad option: a ValueError), vLLM's default iterator instead;
* sharded path (``tensor_parallel_size`` > 1): the model is initialised, the rank's files
  ``model-rank-{rank}-part-*.safetensors`` are streamed, and each tensor is copied into the
  initialised state, into a narrowed view where it is smaller (padding); state keys left unfilled
  raise ValueError.

This module has been tested against a small Llama ``torch.nn.Module`` and a stand-in of vLLM's
loader interface, not inside vLLM itself, which cannot be installed where tensorstream is built.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Type

import torch

from .errors import InvalidArgumentError
from .loading import load_into_tensors
from .model import model_loader_config, prefetch
from .streamer import SafeTensorsStreamer

__all__ = ["LOAD_FORMAT", "make_loader_class", "register", "filter_subtensors",
           "prefetch_artifacts"]

LOAD_FORMAT = "flyte-vllm-streaming"

logger = logging.getLogger(__name__)


def filter_subtensors(state: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """``state`` without the tensors that are views into another tensor of it (tied or fused
    parameters), as vLLM's ShardedStateLoader filters a state dict before loading it."""
    by_storage: Dict[Tuple[Any, int], list] = {}
    for name, tensor in state.items():
        if tensor.numel() == 0:
            continue
        storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()
        key = (tensor.device, storage.data_ptr())
        by_storage.setdefault(key, []).append((name, tensor))

    def bounds(tensor: torch.Tensor) -> Tuple[int, int]:
        begin = tensor.data_ptr()
        return begin, begin + tensor.numel() * tensor.element_size()

    kept: Dict[str, torch.Tensor] = {}
    for group in by_storage.values():
        for name, tensor in group:
            begin, end = bounds(tensor)
            inside_another = any(
                other_name != name and bounds(other)[0] <= begin and end <= bounds(other)[1]
                and (bounds(other) != (begin, end) or other_name < name)
                for other_name, other in group)
            if not inside_another:
                kept[name] = tensor
    return {name: tensor for name, tensor in state.items() if name in kept}


def prefetch_artifacts(local_path: Optional[str] = None) -> Optional[str]:
    """Copies the model's other artifacts (config.json, the tokenizer, ...) from the remote
    path to the local one, without the ``*.safetensors`` files when the weights are streamed, as
    the original shims' ``_get_model_files()`` do. Returns the local path, or None when no remote
    path is configured."""
    config = model_loader_config()
    if config.remote_model_path is None:
        return None
    destination = local_path or config.local_model_path
    prefetch(config.remote_model_path, destination,
             exclude_safetensors=config.stream_safetensors)
    return destination


def make_loader_class(base: Type[Any],
                      initialize_model: Optional[Callable[[Any], torch.nn.Module]] = None,
                      tensor_parallel_rank: Optional[Callable[[], int]] = None) -> Type[Any]:
    """The streaming loader as a subclass of ``base``, vLLM's DefaultModelLoader (or a class
    with its interface: ``_get_weights_iterator(source)`` yielding ``(name, tensor)``,
    ``load_model(vllm_config, model_config)``). ``initialize_model(vllm_config)`` and
    ``tensor_parallel_rank()`` are vLLM's functions unless given."""

    class FlyteModelLoader(base):  # type: ignore[misc, valid-type]
        """Streams the weights from FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH (see tensorstream.vllm)."""

        def _get_weights_iterator(self, source: Any) -> Iterator[Tuple[str, torch.Tensor]]:
            try:
                config = model_loader_config()
                if config.remote_model_path is None:
                    raise InvalidArgumentError(
                        "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH (or TENSORSTREAM_REMOTE_MODEL_PATH) "
                        "is not set")
                streamer = SafeTensorsStreamer(config.remote_model_path, config.local_model_path)
            except ValueError as error:
                logger.warning("tensorstream: not streaming (%s); using the default loader", error)
                yield from super()._get_weights_iterator(source)
                return
            prefix = getattr(source, "prefix", "")
            with streamer:
                for name, tensor in streamer.get_tensors():
                    yield prefix + name, tensor

        def load_model(self, vllm_config: Any, model_config: Any) -> torch.nn.Module:
            tensor_parallel_size = vllm_config.parallel_config.tensor_parallel_size
            if tensor_parallel_size <= 1:
                return super().load_model(vllm_config, model_config)
            model = _initialize(vllm_config)
            rank = _rank()
            config = model_loader_config()
            if config.remote_model_path is None:
                raise InvalidArgumentError(
                    "sharded loading needs FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH")
            state = filter_subtensors(model.state_dict())
            with SafeTensorsStreamer(config.remote_model_path, config.local_model_path,
                                     rank=rank, tensor_parallel_size=tensor_parallel_size) as streamer:
                load_into_tensors(streamer.get_tensors(), state, streamer.remote_path,
                                  convert_dtype=True)
            return model.eval()

    def _initialize(vllm_config: Any) -> torch.nn.Module:
        if initialize_model is not None:
            return initialize_model(vllm_config)
        from vllm.model_executor.model_loader.utils import initialize_model as vllm_initialize
        return vllm_initialize(vllm_config=vllm_config)

    def _rank() -> int:
        if tensor_parallel_rank is not None:
            return tensor_parallel_rank()
        from vllm.distributed import get_tensor_model_parallel_rank
        return get_tensor_model_parallel_rank()

    return FlyteModelLoader


def register() -> Type[Any]:
    """Registers the loader with vLLM under ``--load-format flyte-vllm-streaming`` and returns
    its class. Raises ImportError when vLLM (0.9 or later, with register_model_loader) is not
    installed."""
    from vllm.model_executor.model_loader import DefaultModelLoader, register_model_loader

    loader = make_loader_class(DefaultModelLoader)
    register_model_loader(LOAD_FORMAT)(loader)
    return loader
