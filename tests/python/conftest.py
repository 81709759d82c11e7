"""Fixtures of the Python package's tests: checkpoints written here with their oracle tensors,
and real servers started on ephemeral loopback ports (nginx, s3rver, Azurite, the CLI's store
server),
as the C++ tests start them. A missing server program skips its tests with the reason, except in
CI (CI=true), which installs every program and so fails instead."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import struct
from typing import Dict, Iterator, List, Optional

import pytest
import torch

from servers import (NGINX, Azurite, Nginx, S3rver, free_port,  # noqa: F401 (tests import them)
                     stop)

CLI = os.environ.get("TENSORSTREAM_CLI", "")
S3RVER_SCRIPT = os.environ.get("TENSORSTREAM_S3RVER_SCRIPT", "")
AZURITE_SCRIPT = os.environ.get("TENSORSTREAM_AZURITE_SCRIPT", "")

# safetensors dtype names of the torch dtypes the tests write.
DTYPE_NAMES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def require(available: bool, reason: str) -> None:
    """Skips the test when a program it needs is missing, or fails it in CI."""
    if available:
        return
    if os.environ.get("CI") in ("true", "1"):
        pytest.fail(f"{reason} (CI installs it: scripts/setup.sh)")
    pytest.skip(reason)


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The tensor's bytes as safetensors stores them (little-endian, row-major)."""
    flat = tensor.contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def write_safetensors(path: pathlib.Path, tensors: Dict[str, torch.Tensor],
                      metadata: Optional[Dict[str, str]] = None) -> None:
    """A safetensors file: 8-byte little-endian header length, JSON header, then the data."""
    header: Dict[str, object] = {}
    data = bytearray()
    for name, tensor in tensors.items():
        raw = tensor_bytes(tensor)
        header[name] = {"dtype": DTYPE_NAMES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(data))


def random_tensors(seed: int, count: int, prefix: str = "model.layers") -> Dict[str, torch.Tensor]:
    """`count` tensors of every dtype the tests use, shapes from scalars to a few MiB."""
    generator = torch.Generator().manual_seed(seed)
    dtypes = list(DTYPE_NAMES)
    shapes = [(), (7,), (3, 5), (64, 33), (256, 1024), (2, 3, 4), (1024, 1031), (0, 4)]
    tensors = {}
    for index in range(count):
        dtype = dtypes[index % len(dtypes)]
        shape = shapes[index % len(shapes)]
        raw = torch.randint(0, 256, (int(torch.Size(shape).numel()) * torch.empty((), dtype=dtype)
                                     .element_size(),), generator=generator, dtype=torch.uint8)
        if dtype == torch.bool:
            raw = raw % 2
        tensors[f"{prefix}.{index}.weight"] = raw.view(dtype).reshape(shape)
    return tensors


def assert_same_tensors(streamed: Dict[str, torch.Tensor], oracle: Dict[str, torch.Tensor]) -> None:
    """Every tensor of `oracle`, and no other, streamed with its dtype, shape and exact bytes."""
    assert sorted(streamed) == sorted(oracle)
    for name, expected in oracle.items():
        actual = streamed[name]
        assert actual.dtype == expected.dtype, name
        assert actual.shape == expected.shape, name
        assert tensor_bytes(actual) == tensor_bytes(expected), name


@pytest.fixture
def model_dir(tmp_path: pathlib.Path) -> Iterator[tuple]:
    """A two-file checkpoint with an index, and its oracle: (directory, {name: tensor})."""
    first = random_tensors(1, 12, "model.layers.0")
    second = random_tensors(2, 9, "model.layers.1")
    directory = tmp_path / "model"
    write_safetensors(directory / "model-00001-of-00002.safetensors", first)
    write_safetensors(directory / "model-00002-of-00002.safetensors", second)
    weight_map = {name: "model-00001-of-00002.safetensors" for name in first}
    weight_map.update({name: "model-00002-of-00002.safetensors" for name in second})
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))
    (directory / "config.json").write_text('{"model_type": "llama"}')
    yield directory, {**first, **second}


@pytest.fixture
def nginx_factory(tmp_path: pathlib.Path):
    require(os.access(NGINX, os.X_OK), f"nginx is not installed at {NGINX}")
    servers: List[Nginx] = []

    def start(root: pathlib.Path, extra_config: str = "") -> Nginx:
        server = Nginx(root, tmp_path / f"nginx{len(servers)}", extra_config)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def s3rver(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3rver]:
    require(bool(S3RVER_SCRIPT) and os.path.exists(S3RVER_SCRIPT) and shutil.which("node"),
            f"s3rver is not installed at {S3RVER_SCRIPT or '(TENSORSTREAM_S3RVER_SCRIPT unset)'}")
    # s3rver does not check signatures; the requests are signed all the same, as for AWS.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "S3RVER")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(variable, raising=False)
    server = S3rver(tmp_path / "s3rver", "models", S3RVER_SCRIPT)
    yield server
    server.close()


@pytest.fixture
def azurite(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Azurite]:
    require(bool(AZURITE_SCRIPT) and os.path.exists(AZURITE_SCRIPT) and shutil.which("node"),
            "Azurite is not installed at "
            f"{AZURITE_SCRIPT or '(TENSORSTREAM_AZURITE_SCRIPT unset)'}")
    try:
        import azure.storage.blob  # noqa: F401 (the seeding client)
    except ImportError:
        require(False, "the Azure SDK for Python (python3-azure-storage) is not installed")
    for variable in list(os.environ):
        if variable.startswith("AZURE_") or variable in ("IDENTITY_ENDPOINT", "IDENTITY_HEADER"):
            monkeypatch.delenv(variable)
    server = Azurite(tmp_path / "azurite", AZURITE_SCRIPT)
    yield server
    server.close()


@pytest.fixture
def cli() -> str:
    require(bool(CLI) and os.access(CLI, os.X_OK),
            f"the tensorstream tool is not built ({CLI or 'TENSORSTREAM_CLI unset'})")
    return CLI


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No configuration from the machine's environment: each test sets what it tests."""
    for variable in list(os.environ):
        if variable.startswith(("TENSORSTREAM_", "FLYTE_MODEL_LOADER_", "HF_")) or (
                variable.lower() in ("http_proxy", "https_proxy", "no_proxy")):
            if variable not in ("TENSORSTREAM_CLI", "TENSORSTREAM_S3RVER_SCRIPT",
                                "TENSORSTREAM_AZURITE_SCRIPT"):
                monkeypatch.delenv(variable)
