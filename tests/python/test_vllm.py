"""tensorstream.vllm's loader, against a stand-in of vLLM's loader interface and a small Llama
(vLLM itself cannot be installed here; docs/python.md says so)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

import tensorstream
import tensorstream.vllm
from conftest import write_safetensors
from test_load_into_module import TinyLlama


@dataclasses.dataclass
class Source:
    """vLLM's DefaultModelLoader.Source: where weights come from and the prefix of their names."""

    model_or_path: str
    prefix: str = ""


class StandInDefaultLoader:
    """The part of vLLM's DefaultModelLoader the streaming loader builds on: load_model() makes
    the model and feeds it the weights of _get_weights_iterator(); the default iterator reads
    local files (here: a dict, recording that it was used)."""

    def __init__(self, model_factory, local_weights=None):
        self.model_factory = model_factory
        self.local_weights = local_weights or {}
        self.default_iterator_used = False

    def _get_weights_iterator(self, source):
        self.default_iterator_used = True
        for name, tensor in self.local_weights.items():
            yield source.prefix + name, tensor

    def load_model(self, vllm_config, model_config):
        model = self.model_factory()
        state = model.state_dict()
        with torch.no_grad():
            for name, tensor in self._get_weights_iterator(Source("m", prefix="")):
                state[name].copy_(tensor)
        return model.eval()


@dataclasses.dataclass
class ParallelConfig:
    tensor_parallel_size: int


@dataclasses.dataclass
class VllmConfig:
    parallel_config: ParallelConfig


def checkpoint(module, path):
    generator = torch.Generator().manual_seed(9)
    state = {name: torch.randn(t.shape, generator=generator) for name, t in module.state_dict().items()}
    write_safetensors(path, state)
    return state


def test_the_ordinary_path_streams_the_remote_model(tmp_path, monkeypatch):
    state = checkpoint(TinyLlama(), tmp_path / "remote" / "model.safetensors")
    monkeypatch.setenv("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", str(tmp_path / "remote"))
    loader_class = tensorstream.vllm.make_loader_class(StandInDefaultLoader)
    loader = loader_class(TinyLlama)
    model = loader.load_model(VllmConfig(ParallelConfig(1)), None)
    assert not loader.default_iterator_used
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, state[name]), name
    names = [name for name, _ in loader._get_weights_iterator(Source("m", prefix="model."))]
    assert sorted(names) == sorted("model." + name for name in state)


def test_without_a_remote_path_the_default_iterator_loads(tmp_path, caplog):
    local = {name: torch.ones(t.shape) for name, t in TinyLlama().state_dict().items()}
    loader = tensorstream.vllm.make_loader_class(StandInDefaultLoader)(TinyLlama, local)
    with caplog.at_level(logging.WARNING, logger="tensorstream.vllm"):
        model = loader.load_model(VllmConfig(ParallelConfig(1)), None)
    assert loader.default_iterator_used
    assert all(torch.all(t == 1) for t in model.state_dict().values())
    assert "FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH" in caplog.text


def test_the_sharded_path_copies_each_ranks_files_into_narrowed_parameters(tmp_path, monkeypatch):
    full = TinyLlama()
    state = checkpoint(full, tmp_path / "unused.safetensors")
    # Each rank's file holds half of every 2-D weight's rows; its model is padded to a larger
    # vocabulary (as LoRA pads), so the embedding fills a narrowed view.
    padded = lambda: TinyLlama(vocab=104)
    for rank in range(2):
        shard = {name: (t.chunk(2)[rank].clone() if t.dim() == 2 else t) for name, t in state.items()}
        write_safetensors(tmp_path / "remote" / f"model-rank-{rank}-part-0.safetensors", shard)
    monkeypatch.setenv("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", str(tmp_path / "remote"))

    def half_model():
        model = padded()
        with torch.no_grad():
            for tensor in model.state_dict().values():
                tensor.zero_()
        return model

    for rank in range(2):
        loader_class = tensorstream.vllm.make_loader_class(
            StandInDefaultLoader, initialize_model=lambda config: half_model(),
            tensor_parallel_rank=lambda: rank)
        model = loader_class(padded).load_model(VllmConfig(ParallelConfig(2)), None)
        assert not model.training
        loaded = model.state_dict()
        rows = state["embed_tokens.weight"].chunk(2)[rank]
        assert torch.equal(loaded["embed_tokens.weight"][:rows.shape[0]], rows)
        assert torch.all(loaded["embed_tokens.weight"][rows.shape[0]:] == 0)
        assert torch.equal(loaded["norm.weight"], state["norm.weight"])


def test_the_sharded_path_raises_value_error_for_unfilled_state(tmp_path, monkeypatch):
    write_safetensors(tmp_path / "remote" / "model-rank-0-part-0.safetensors",
                      {"norm.weight": torch.ones(32)})
    monkeypatch.setenv("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", str(tmp_path / "remote"))
    loader_class = tensorstream.vllm.make_loader_class(
        StandInDefaultLoader, initialize_model=lambda config: TinyLlama(),
        tensor_parallel_rank=lambda: 0)
    with pytest.raises(ValueError, match="Missing keys"):
        loader_class(TinyLlama).load_model(VllmConfig(ParallelConfig(2)), None)


def test_filter_subtensors_drops_views_into_other_tensors():
    fused = torch.zeros(6, 4)
    state = {"qkv": fused, "q": fused[:2], "k": fused[2:4], "alone": torch.zeros(3)}
    assert list(tensorstream.vllm.filter_subtensors(state)) == ["qkv", "alone"]


def test_register_without_vllm_is_an_import_error():
    with pytest.raises(ImportError):
        tensorstream.vllm.register()
