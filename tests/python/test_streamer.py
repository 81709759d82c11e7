"""SafeTensorsStreamer from Python: exact tensors from files, nginx and s3rver, without copies,
in bounded memory."""

from __future__ import annotations

import gc
import hashlib
import os
import pathlib

import pytest
import torch

import tensorstream
from conftest import (DTYPE_NAMES, assert_same_tensors, random_tensors, tensor_bytes,
                      write_safetensors)


def test_streams_every_tensor_of_a_local_checkpoint_byte_exact(model_dir):
    directory, oracle = model_dir
    streamer = tensorstream.SafeTensorsStreamer(str(directory), "/srv/model")
    streamed = dict(streamer.get_tensors())
    assert_same_tensors(streamed, oracle)
    stats = streamer.stats()
    assert stats["tensors"] == stats["total_tensors"] == len(oracle)
    assert stats["bytes"] == sum(len(tensor_bytes(t)) for t in oracle.values())


def test_streams_from_nginx_byte_exact(model_dir, nginx_factory):
    directory, oracle = model_dir
    server = nginx_factory(directory.parent)
    streamed = dict(tensorstream.SafeTensorsStreamer(
        f"{server.url}/model/model.safetensors.index.json").get_tensors())
    assert_same_tensors(streamed, oracle)


def test_streams_from_s3rver_byte_exact(model_dir, s3rver):
    directory, oracle = model_dir
    s3rver.put_directory(directory, "llama/")
    streamer = tensorstream.SafeTensorsStreamer("s3://models/llama/", "/srv/model",
                                                endpoint_url=s3rver.endpoint, chunk_size=1 << 20)
    assert_same_tensors(dict(streamer.get_tensors()), oracle)


def test_streams_from_azurite_byte_exact(model_dir, azurite, monkeypatch):
    directory, oracle = model_dir
    azurite.put_directory(directory, "models", "llama/")
    monkeypatch.setenv("AZURE_STORAGE_KEY", azurite.key)
    streamer = tensorstream.SafeTensorsStreamer("az://models/llama/", endpoint_url=azurite.endpoint,
                                                account=azurite.account, chunk_size=1 << 20)
    assert_same_tensors(dict(streamer.get_tensors()), oracle)
    # The blob endpoint's URL is Azure's too, and without credentials a private container says no.
    blob_url = f"{azurite.endpoint}/models/llama/"
    assert_same_tensors(dict(tensorstream.SafeTensorsStreamer(
        blob_url, endpoint_url=azurite.endpoint).get_tensors()), oracle)
    with pytest.raises(tensorstream.errors.StorageError, match="az://models/llama/"):
        dict(tensorstream.SafeTensorsStreamer("az://models/llama/", endpoint_url=azurite.endpoint,
                                              anonymous=True).get_tensors())


def test_streams_hf_urls_from_the_hugging_face_cache_offline(model_dir, tmp_path, monkeypatch):
    directory, oracle = model_dir
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--llama"
    for file in directory.iterdir():
        blob = repo / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(file.read_bytes())
        link = repo / "snapshots" / commit / file.name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(pathlib.Path("../../blobs") / blob.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    streamer = tensorstream.SafeTensorsStreamer("hf://acme/llama", hf_token="hf_unused")
    assert_same_tensors(dict(streamer.get_tensors()), oracle)
    with pytest.raises(tensorstream.errors.NotFoundError,
                       match="hf://acme/llama@v2: offline .HF_HUB_OFFLINE."):
        dict(tensorstream.SafeTensorsStreamer("hf://acme/llama@v2").get_tensors())


def test_the_seed_signature_takes_its_arguments_by_position(model_dir):
    directory, oracle = model_dir
    streamer = tensorstream.SafeTensorsStreamer(directory, "/tmp/local", 1 << 20, 4, 0, 1)
    assert streamer.remote_path == str(directory)
    assert streamer.local_path == "/tmp/local"
    assert_same_tensors(dict(streamer.get_tensors()), oracle)


def test_tensors_are_ordinary_writable_cpu_tensors(tmp_path):
    tensors = {"a": torch.arange(1 << 16, dtype=torch.float32)}
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (name, tensor), = tensorstream.SafeTensorsStreamer(tmp_path / "model.safetensors").get_tensors()
    assert name == "a"
    assert tensor.device.type == "cpu" and tensor.is_contiguous() and not tensor.requires_grad
    tensor.add_(1)
    assert torch.equal(tensor, tensors["a"] + 1)


def test_keeping_every_tensor_of_a_model_larger_than_the_memory_limit_works(tmp_path):
    oracle = {f"w{index}": torch.full((256, 1024), index, dtype=torch.float32)
              for index in range(8)}  # 8 MiB, in tensors of 1 MiB
    write_safetensors(tmp_path / "model.safetensors", oracle)
    streamer = tensorstream.SafeTensorsStreamer(tmp_path, memory_limit=2 << 20,
                                                chunk_size=256 << 10)
    kept = dict(streamer.get_tensors())
    assert_same_tensors(kept, oracle)
    # What the stream held at once stayed within its limit though the consumer kept 8 MiB,
    # every byte of which was mapped afresh: nothing was released to recycle.
    assert streamer.stats()["peak_memory"] <= 2 << 20
    assert streamer.stats()["fresh_memory"] == 8 << 20


def test_direct_io_on_streams_the_same_tensors_past_the_page_cache(tmp_path):
    oracle = {f"w{index}": torch.full((256, 1024 + index), index, dtype=torch.float32)
              for index in range(4)}
    oracle["bias"] = torch.arange(10, dtype=torch.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, oracle)
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError as error:
        pytest.skip(f"the file system of {tmp_path} refuses O_DIRECT: {error}")
    direct = tensorstream.SafeTensorsStreamer(tmp_path, direct_io="on")
    assert_same_tensors(dict(direct.get_tensors()), oracle)
    assert direct.stats()["direct_bytes"] >= 4 * 256 * 1024 * 4
    buffered = tensorstream.SafeTensorsStreamer(tmp_path, direct_io="off")
    assert_same_tensors(dict(buffered.get_tensors()), oracle)
    assert buffered.stats()["direct_bytes"] == 0


def test_a_hard_cap_that_kept_tensors_fill_is_an_error_not_a_hang(tmp_path):
    write_safetensors(tmp_path / "model.safetensors",
                      {f"w{i}": torch.zeros(256, 1024) for i in range(4)})
    streamer = tensorstream.SafeTensorsStreamer(tmp_path, memory_limit=2 << 20,
                                                memory_accounting="until_released")
    with pytest.raises(tensorstream.Error) as raised:
        dict(streamer.get_tensors())
    assert "memory_limit" in str(raised.value)


def test_released_tensors_give_their_memory_back_to_the_stream(tmp_path):
    write_safetensors(tmp_path / "model.safetensors",
                      {f"w{i}": torch.full((256, 1024), i, dtype=torch.float32) for i in range(8)})
    streamer = tensorstream.SafeTensorsStreamer(tmp_path, memory_limit=2 << 20,
                                                memory_accounting="until_released")
    sums = []
    for _, tensor in streamer.get_tensors():
        sums.append(int(tensor[0, 0]))
        del tensor
        gc.collect()
    assert sorted(sums) == list(range(8))


def test_tensors_stay_valid_after_the_streamer_is_closed_and_gone(model_dir):
    directory, oracle = model_dir
    streamer = tensorstream.SafeTensorsStreamer(directory)
    kept = dict(streamer.get_tensors())
    streamer.close()
    del streamer
    gc.collect()
    assert_same_tensors(kept, oracle)


def test_a_closed_streamer_refuses_next_and_a_second_close_is_harmless(model_dir):
    directory, _ = model_dir
    with tensorstream.SafeTensorsStreamer(directory) as streamer:
        next(streamer.get_tensors())
    assert streamer.closed
    streamer.close()
    with pytest.raises(tensorstream.StateError, match="the streamer is closed"):
        next(streamer.get_tensors())
    assert "<closed>" in repr(streamer)


def test_get_tensors_is_a_generator_and_single_pass(model_dir):
    directory, oracle = model_dir
    streamer = tensorstream.SafeTensorsStreamer(directory)
    tensors = streamer.get_tensors()
    assert hasattr(tensors, "send") and hasattr(tensors, "close")
    first_name, _ = next(tensors)
    rest = dict(streamer.get_tensors())
    assert first_name not in rest and len(rest) == len(oracle) - 1


def test_tensor_parallel_ranks_stream_their_own_files(tmp_path):
    oracles = []
    for rank in range(2):
        tensors = random_tensors(10 + rank, 6, f"rank{rank}")
        oracles.append(tensors)
        write_safetensors(tmp_path / f"model-rank-{rank}-part-0.safetensors", tensors)
    for rank in range(2):
        streamer = tensorstream.SafeTensorsStreamer(tmp_path, rank=rank, tensor_parallel_size=2)
        assert_same_tensors(dict(streamer.get_tensors()), oracles[rank])


def test_dtypes_the_header_names_become_the_torch_dtypes(tmp_path):
    oracle = random_tensors(3, 10)
    write_safetensors(tmp_path / "model.safetensors", oracle)
    streamed = dict(tensorstream.SafeTensorsStreamer(tmp_path).get_tensors())
    assert {t.dtype for t in streamed.values()} == set(
        [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
         torch.int16, torch.int8, torch.uint8, torch.bool])
    assert_same_tensors(streamed, oracle)


def test_inspect_reads_the_headers_a_stream_would_read(model_dir):
    directory, oracle = model_dir
    headers = tensorstream.inspect(directory)
    assert [pathlib.Path(h.url).name for h in headers] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    names = {name for header in headers for name in header.tensors}
    assert names == set(oracle)
    info = headers[0].tensors["model.layers.0.4.weight"]
    assert info.shape == tuple(oracle["model.layers.0.4.weight"].shape)
    assert info.dtype == DTYPE_NAMES[oracle["model.layers.0.4.weight"].dtype] == "I64"
    begin, end = info.data_offsets
    assert end - begin == len(tensor_bytes(oracle["model.layers.0.4.weight"]))


def test_prefetch_copies_the_other_artifacts_from_s3rver(model_dir, s3rver, tmp_path):
    directory, _ = model_dir
    (directory / "tokenizer" / "vocab.txt").parent.mkdir()
    (directory / "tokenizer" / "vocab.txt").write_text("a\nb\n")
    s3rver.put_directory(directory, "llama/")
    local = tmp_path / "local"
    result = tensorstream.prefetch("s3://models/llama/", local, endpoint_url=s3rver.endpoint)
    assert result.files == ["config.json", "model.safetensors.index.json", "tokenizer/vocab.txt"]
    assert (local / "tokenizer" / "vocab.txt").read_text() == "a\nb\n"
    assert result.bytes == sum((local / f).stat().st_size for f in result.files)
    everything = tensorstream.prefetch(f"file://{directory}", tmp_path / "all",
                                       exclude_safetensors=False)
    assert "model-00001-of-00002.safetensors" in everything.files
