"""The local cache from Python: cache_dir= keeps what a stream reads, and the next stream of the
same files reads it from there, with the same tensors."""

from __future__ import annotations

import os
import time

import pytest

import tensorstream
from conftest import tensor_bytes


def stream(url, **options):
    streamer = tensorstream.SafeTensorsStreamer(url, chunk_size=4096, **options)
    tensors = dict(streamer.get_tensors())
    return tensors, streamer.stats()


def test_a_second_stream_reads_from_the_cache(tmp_path, model_dir, nginx_factory):
    directory, oracle = model_dir
    # Written a minute before it is served: nginx's ETag (the time in seconds) then tells any
    # rewrite apart, and the cache trusts what it keeps.
    for file in directory.iterdir():
        os.utime(file, (time.time() - 60, time.time() - 60))
    server = nginx_factory(directory.parent)
    url = f"{server.url}/model/"
    cache = tmp_path / "cache"
    first, cold = stream(url + "model-00001-of-00002.safetensors", cache_dir=str(cache))
    second, warm = stream(url + "model-00001-of-00002.safetensors", cache_dir=str(cache))
    for tensors in (first, second):
        assert sorted(tensors) == sorted(n for n in oracle if n.startswith("model.layers.0"))
        for name, tensor in tensors.items():
            assert tensor.dtype == oracle[name].dtype and tensor.shape == oracle[name].shape
            assert tensor_bytes(tensor) == tensor_bytes(oracle[name]), name
    assert cold["source_bytes"] > 0
    assert warm["source_bytes"] == 0, (cold, warm)
    assert warm["cached_bytes"] >= warm["bytes"]
    assert warm["io_mode"] == "http + cache"


def test_offline_without_an_entry_is_a_not_found_error(tmp_path):
    with pytest.raises(tensorstream.NotFoundError, match="not in the cache"):
        stream("http://127.0.0.1:9/model.safetensors", cache_dir=str(tmp_path),
               cache_mode="offline")


def test_a_malformed_cache_mode_is_refused(tmp_path):
    with pytest.raises(tensorstream.InvalidArgumentError, match="cache_mode must be one of"):
        stream(str(tmp_path), cache_dir=str(tmp_path), cache_mode="sometimes")


def test_a_cache_option_without_a_cache_is_refused(tmp_path, monkeypatch):
    # offline promises to ask the source nothing; without a cache it would read all of it.
    monkeypatch.delenv("TENSORSTREAM_CACHE_DIR", raising=False)
    monkeypatch.delenv("FLYTE_MODEL_LOADER_CACHE_DIR", raising=False)
    for option in ({"cache_mode": "offline"}, {"cache_size": 1 << 30},
                   {"cache_min_free": "10%"}):
        with pytest.raises(tensorstream.InvalidArgumentError,
                           match=f"{next(iter(option))} needs a cache: cache_dir="):
            stream(str(tmp_path), **option)


def test_a_floor_is_a_size_or_a_share(tmp_path, model_dir):
    directory, oracle = model_dir
    cache = tmp_path / "cache"
    for floor in ("10%", "1GiB", 0, 1 << 20):
        tensors, _ = stream(str(directory), cache_dir=str(cache), cache_min_free=floor)
        assert sorted(tensors) == sorted(oracle)
    with pytest.raises(tensorstream.InvalidArgumentError,
                       match=r"cache_min_free 120%: not a size \(5GiB\) or a share of the file "
                             r"system \(10%\)"):
        stream(str(directory), cache_dir=str(cache), cache_min_free="120%")
