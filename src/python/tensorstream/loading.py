"""Loading a stream into a ``torch.nn.Module``, tensor by tensor as the tensors arrive."""

from __future__ import annotations

import dataclasses
import json
from typing import Dict, Iterable, List, Tuple

import torch

from .errors import InvalidArgumentError
from .streamer import SafeTensorsStreamer

__all__ = ["LoadReport", "load_into_module", "load_into_tensors"]


@dataclasses.dataclass
class LoadReport:
    """What a load did: tensors copied, their bytes, streamed names skipped
    (``ignore_unexpected``, in order) and targets never filled (not ``strict``, sorted)."""

    tensors: int = 0
    bytes: int = 0
    ignored: List[str] = dataclasses.field(default_factory=list)
    missing: List[str] = dataclasses.field(default_factory=list)


def _shape(tensor: torch.Tensor) -> str:
    return "[" + ", ".join(str(size) for size in tensor.shape) + "]"


def _quote(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def _label(name: str, target_name: str) -> str:
    """``"model.x"``, or ``"model.x" (as "x")`` when the prefixes renamed it."""
    text = _quote(name)
    return text if target_name == name else f"{text} (as {_quote(target_name)})"


def load_into_tensors(tensors: Iterable[Tuple[str, torch.Tensor]], targets: Dict[str, torch.Tensor],
                      source: str, *, strict: bool = True, ignore_unexpected: bool = False,
                      convert_dtype: bool = False, strip_prefix: str = "",
                      add_prefix: str = "") -> LoadReport:
    """Copies each ``(name, tensor)`` of ``tensors`` into ``targets[name]`` as it comes, with the
    rules of load_into_module(); ``source`` names where the tensors come from in errors."""
    report = LoadReport()
    filled: Dict[str, str] = {}
    for name, tensor in tensors:
        stripped = bool(strip_prefix) and name.startswith(strip_prefix)
        target_name = add_prefix + (name[len(strip_prefix):] if stripped else name)
        target = targets.get(target_name)
        if target is None:
            if not ignore_unexpected:
                raise InvalidArgumentError(
                    f"unexpected tensor {_label(name, target_name)} from {source}: no parameter "
                    "or buffer has that name")
            report.ignored.append(name)
            continue
        if target_name in filled:
            raise InvalidArgumentError(
                f"tensor {_label(name, target_name)}: {_quote(target_name)} was already "
                f"loaded from {_quote(filled[target_name])}")
        filled[target_name] = name
        if tensor.dtype != target.dtype and not convert_dtype:
            raise InvalidArgumentError(
                f"tensor {_label(name, target_name)}: dtype {tensor.dtype} differs from the "
                f"target's {target.dtype} (convert_dtype converts it)")
        if tensor.dim() != target.dim() or any(
                size > limit for size, limit in zip(tensor.shape, target.shape)):
            raise InvalidArgumentError(
                f"tensor {_label(name, target_name)}: streamed shape {_shape(tensor)} does not "
                f"fit the target's shape {_shape(target)}")
        view = target
        # A rank's slice of a tensor-parallel checkpoint fills the start of its target.
        for dim, size in enumerate(tensor.shape):
            if size < target.shape[dim]:
                view = view.narrow(dim, 0, size)
        with torch.no_grad():
            view.copy_(tensor)
        report.tensors += 1
        report.bytes += tensor.numel() * tensor.element_size()
    report.missing = sorted(set(targets) - set(filled))
    if strict and report.missing:
        keys = ", ".join(_quote(name) for name in report.missing)
        raise InvalidArgumentError(f"Missing keys (never streamed from {source}): {keys}")
    return report


def load_into_module(streamer: SafeTensorsStreamer, module: torch.nn.Module, strict: bool = True,
                     *, ignore_unexpected: bool = False, convert_dtype: bool = False,
                     strip_prefix: str = "", add_prefix: str = "") -> LoadReport:
    """Streams every tensor of ``streamer`` into the parameters and buffers of ``module``, named
    as its ``state_dict()`` names them, releasing each streamed tensor once copied: peak memory
    is the module plus the stream's memory_limit, not two copies of the model.

    A streamed name is mapped by removing ``strip_prefix`` (when it starts with it) and then
    prepending ``add_prefix``. A tensor with a dimension smaller than its target's fills the
    target narrowed to it (a rank's slice of a tensor-parallel checkpoint); more dimensions, fewer,
    or a larger one is an InvalidArgumentError (a ValueError) naming both shapes, as is a dtype
    that differs without ``convert_dtype``, a name without a target without
    ``ignore_unexpected``, and two tensors for one target. With ``strict``, targets no tensor
    filled are an error at the end; without it they are listed in the report. Copies run under
    ``torch.no_grad()``, so parameters that require gradients can be filled. The C++
    ``load_into_module`` follows the same rules, with the same messages.
    """
    targets = module.state_dict(keep_vars=True)
    return load_into_tensors(streamer.get_tensors(), targets, streamer.remote_path,
                             strict=strict, ignore_unexpected=ignore_unexpected,
                             convert_dtype=convert_dtype, strip_prefix=strip_prefix,
                             add_prefix=add_prefix)
