"""load_into_module() fills a torch.nn.Module from a stream with the C++ rules and messages."""

from __future__ import annotations

import pytest
import torch

import tensorstream
from conftest import write_safetensors


class TinyLlama(torch.nn.Module):
    """The parameter names and shapes of a Llama, two layers, small sizes."""

    def __init__(self, hidden=32, intermediate=64, vocab=100, layers=2, kv_hidden=16):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            layer = torch.nn.Module()
            layer.self_attn = torch.nn.Module()
            layer.self_attn.q_proj = torch.nn.Linear(hidden, hidden, bias=False)
            layer.self_attn.k_proj = torch.nn.Linear(hidden, kv_hidden, bias=False)
            layer.self_attn.v_proj = torch.nn.Linear(hidden, kv_hidden, bias=False)
            layer.self_attn.o_proj = torch.nn.Linear(hidden, hidden, bias=False)
            layer.mlp = torch.nn.Module()
            layer.mlp.gate_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            layer.mlp.up_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            layer.mlp.down_proj = torch.nn.Linear(intermediate, hidden, bias=False)
            layer.input_layernorm = torch.nn.LayerNorm(hidden, elementwise_affine=True)
            self.layers.append(layer)
        self.norm = torch.nn.LayerNorm(hidden)


def checkpoint_of(module, path, prefix="model."):
    """The module's state, randomised, as a checkpoint with `prefix` on every name."""
    generator = torch.Generator().manual_seed(5)
    state = {prefix + name: torch.randn(tensor.shape, generator=generator)
             for name, tensor in module.state_dict().items()}
    write_safetensors(path, state)
    return state


def test_fills_every_parameter_with_the_streamed_values(tmp_path):
    module = TinyLlama()
    state = checkpoint_of(module, tmp_path / "model.safetensors")
    report = tensorstream.load_into_module(
        tensorstream.SafeTensorsStreamer(tmp_path), module, strip_prefix="model.")
    assert report.tensors == len(state) and report.missing == [] and report.ignored == []
    assert report.bytes == sum(t.numel() * 4 for t in state.values())
    for name, tensor in module.state_dict().items():
        assert torch.equal(tensor, state["model." + name]), name
    assert module.layers[0].mlp.up_proj.weight.requires_grad


def test_a_smaller_streamed_tensor_fills_a_narrowed_target(tmp_path):
    module = torch.nn.Linear(8, 6, bias=False)
    torch.nn.init.zeros_(module.weight)
    write_safetensors(tmp_path / "m.safetensors", {"weight": torch.ones(4, 8)})
    tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path), module)
    assert torch.equal(module.weight[:4], torch.ones(4, 8))
    assert torch.equal(module.weight[4:], torch.zeros(2, 8))


def test_errors_name_the_tensor_as_the_cpp_loader_does(tmp_path):
    module = torch.nn.Linear(4, 4)
    write_safetensors(tmp_path / "a" / "m.safetensors", {"weight": torch.ones(5, 4),
                                                         "bias": torch.ones(4)})
    with pytest.raises(ValueError) as raised:
        tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path / "a"), module)
    assert str(raised.value) == ('tensor "weight": streamed shape [5, 4] does not fit the '
                                 "target's shape [4, 4]")

    write_safetensors(tmp_path / "b" / "m.safetensors", {"weight": torch.ones(4, 4)})
    source = str(tmp_path / "b")
    with pytest.raises(tensorstream.InvalidArgumentError) as raised:
        tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(source), module)
    assert str(raised.value) == f'Missing keys (never streamed from {source}): "bias"'
    report = tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(source), module,
                                           strict=False)
    assert report.missing == ["bias"]

    write_safetensors(tmp_path / "c" / "m.safetensors", {"extra": torch.ones(1),
                                                         "weight": torch.ones(4, 4),
                                                         "bias": torch.ones(4)})
    with pytest.raises(ValueError, match='unexpected tensor "extra" from .*: no parameter'):
        tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path / "c"), module)
    report = tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path / "c"),
                                           module, ignore_unexpected=True)
    assert report.ignored == ["extra"] and report.tensors == 2

    write_safetensors(tmp_path / "d" / "m.safetensors", {"weight": torch.ones(4, 4).half(),
                                                         "bias": torch.ones(4)})
    with pytest.raises(ValueError, match='tensor "weight": dtype torch.float16 differs from the '
                                         "target's torch.float32 \\(convert_dtype converts it\\)"):
        tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path / "d"), module)
    tensorstream.load_into_module(tensorstream.SafeTensorsStreamer(tmp_path / "d"), module,
                                  convert_dtype=True)
    assert torch.equal(module.weight, torch.ones(4, 4))
