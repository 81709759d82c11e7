"""The seed's environment variables configure the Python streamer as they configure the C++ one:
explicit arguments beat TENSORSTREAM_*, which beats FLYTE_MODEL_LOADER_*, which beats defaults."""

from __future__ import annotations

import pytest
import torch

import tensorstream
from conftest import write_safetensors


@pytest.fixture
def one_tensor(tmp_path):
    """A checkpoint of one 1 MiB tensor: its range reads count chunk_size."""
    write_safetensors(tmp_path / "model.safetensors", {"w": torch.zeros(1 << 18)})
    return tmp_path / "model.safetensors"


def reads_of(streamer) -> int:
    dict(streamer.get_tensors())
    return streamer.stats()["requests"]


def test_flyte_chunk_size_sets_the_reads(one_tensor, monkeypatch):
    default = reads_of(tensorstream.SafeTensorsStreamer(one_tensor))
    monkeypatch.setenv("FLYTE_MODEL_LOADER_CHUNK_SIZE", str(128 << 10))
    # 1 MiB in 128 KiB reads: eight more than in one.
    assert reads_of(tensorstream.SafeTensorsStreamer(one_tensor)) == default + 7


def test_tensorstream_beats_flyte_and_an_argument_beats_both(one_tensor, monkeypatch):
    default = reads_of(tensorstream.SafeTensorsStreamer(one_tensor))
    monkeypatch.setenv("FLYTE_MODEL_LOADER_CHUNK_SIZE", str(128 << 10))
    monkeypatch.setenv("TENSORSTREAM_CHUNK_SIZE", str(512 << 10))
    assert reads_of(tensorstream.SafeTensorsStreamer(one_tensor)) == default + 1
    assert reads_of(tensorstream.SafeTensorsStreamer(one_tensor, chunk_size=256 << 10)) == default + 3


def test_a_malformed_variable_is_a_value_error_naming_it(one_tensor, monkeypatch):
    monkeypatch.setenv("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "lots")
    with pytest.raises(ValueError, match="FLYTE_MODEL_LOADER_MAX_CONCURRENCY.*lots"):
        tensorstream.SafeTensorsStreamer(one_tensor)


def test_model_loader_config_reads_the_environment(monkeypatch):
    config = tensorstream.model_loader_config()
    assert config.remote_model_path is None
    assert config.local_model_path == "/srv/model"
    assert (config.chunk_size, config.max_concurrency) == (16 << 20, 32)
    assert config.stream_safetensors is False
    monkeypatch.setenv("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", "s3://models/llama/")
    monkeypatch.setenv("FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH", "/mnt/llama")
    monkeypatch.setenv("FLYTE_MODEL_LOADER_STREAM_SAFETENSORS", "TRUE")
    monkeypatch.setenv("TENSORSTREAM_MAX_CONCURRENCY", "8")
    config = tensorstream.model_loader_config()
    assert config.remote_model_path == "s3://models/llama/"
    assert config.local_model_path == "/mnt/llama"
    assert config.max_concurrency == 8
    assert config.stream_safetensors is True
