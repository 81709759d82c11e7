"""tensorstream.store.attach(): a store server's rank as torch tensors over its shared memory."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import time

import pytest
import torch

import tensorstream
from conftest import stop, tensor_bytes


@pytest.fixture
def server(tmp_path, cli):
    """`tensorstream serve` of a generated tiny model, two ranks, with a KV cache."""
    work = tmp_path / "store"
    work.mkdir(mode=0o700)
    subprocess.run([cli, "gen-model", str(work / "model")], check=True, capture_output=True)
    socket_path = work / "store.sock"
    ready = work / "ready.json"
    process = subprocess.Popen(
        [cli, "serve", str(work / "model"), "--tp", "2", "--socket", str(socket_path),
         "--ready-file", str(ready), "--kv-cache-memory", "1MiB"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the store server was not ready within 30 s"
        time.sleep(0.02)
    yield socket_path
    stop(process)


def cli_checksums(cli, socket_path, rank):
    """{name: sha256} of the rank's tensors as the C++ client reads them."""
    lines = subprocess.run([cli, "attach", str(socket_path), "--rank", str(rank), "--json",
                            "--checksum", "sha256"], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    return {entry["name"]: entry["sha256"] for entry in map(json.loads, lines) if "name" in entry}


def test_every_tensor_of_each_rank_matches_the_cpp_client(server, cli):
    for rank in range(2):
        attached = tensorstream.store.attach(server, rank)
        assert attached.rank == rank and attached.tensor_parallel_size == 2
        assert attached.config.get("num_hidden_layers") == 2
        tensors = {**attached.weights, **attached.kv_cache}
        ours = {name: hashlib.sha256(tensor_bytes(t)).hexdigest() for name, t in tensors.items()}
        assert ours == cli_checksums(cli, server, rank)
        assert attached.kv_cache and all(".kv_cache." in name for name in attached.kv_cache)
        assert attached.kv_cache_info["num_layers"] == 2


def test_the_kv_cache_is_memory_shared_by_every_worker_and_weights_are_private(server):
    first = tensorstream.store.attach(server, 0)
    second = tensorstream.store.attach(server, 0)
    name = next(iter(first.kv_cache))
    first.kv_cache[name].fill_(1.5)
    assert torch.all(second.kv_cache[name] == 1.5)
    weight = next(iter(first.weights))
    before = second.weights[weight].clone()
    first.weights[weight].add_(1)  # copy-on-write: this process's pages only
    assert torch.equal(second.weights[weight], before)


def test_tensors_outlive_the_attachment(server):
    weights = tensorstream.store.attach(server, 1).weights
    expected = {name: tensor.clone() for name, tensor in weights.items()}
    gc.collect()
    for name, tensor in weights.items():
        assert torch.equal(tensor, expected[name])


def test_a_rank_the_server_does_not_serve_is_a_value_error(server):
    with pytest.raises(ValueError) as raised:
        tensorstream.store.attach(server, 5)
    assert str(raised.value).startswith(f"{server}: ")


def test_no_server_is_an_os_error_naming_the_socket(tmp_path):
    path = tmp_path / "absent.sock"
    with pytest.raises(tensorstream.StorageError) as raised:
        tensorstream.store.attach(path, 0, timeout=1)
    assert str(raised.value).startswith(f"{path}: ")
    assert isinstance(raised.value, OSError)


def test_an_impostor_whose_memory_is_not_sealed_is_refused(server, tmp_path):
    """Whoever answers on a socket must hand out sealed memory, or attach refuses it."""
    import array
    import socket
    import threading

    # A real reply to copy, with the descriptors dropped.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(server))
        body = json.dumps({"op": "attach", "rank": 0}).encode()
        client.sendall(struct.pack("<I", len(body)) + body)
        data, fds = b"", []
        while len(data) < 4 or len(data) < 4 + struct.unpack("<I", data[:4])[0]:
            chunk, ancillary, _, _ = client.recvmsg(1 << 20, socket.CMSG_SPACE(253 * 4))
            for _, _, payload in ancillary:
                fds += array.array("i", payload[: len(payload) - len(payload) % 4])
            data += chunk
        for fd in fds:
            os.close(fd)
    reply = json.loads(data[4:])
    impostor_fds = []
    for region in reply["regions"]:
        fd = os.memfd_create(region["name"])
        os.ftruncate(fd, region["bytes"])
        impostor_fds.append(fd)

    path = tmp_path / "impostor.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()

    def answer():
        connection, _ = listener.accept()
        with connection:
            socket.send_fds(connection, [data], impostor_fds)
            connection.recv(1)

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        with pytest.raises(PermissionError) as raised:
            tensorstream.store.attach(path, 0, timeout=5)
        assert str(raised.value) == (
            f'{path}: refusing region "weights": its memory is not sealed read-only as a store '
            "server's is, so whoever answered on this socket could change it under this process")
    finally:
        thread.join()
        listener.close()
        for fd in impostor_fds:
            os.close(fd)


def _interrupt_after(seconds):
    """Sends this process SIGINT (Ctrl-C) after `seconds`, from another thread."""
    import threading

    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_interrupts_an_attach_that_waits_for_its_server(tmp_path):
    timer = _interrupt_after(0.3)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            tensorstream.store.attach(tmp_path / "not-yet.sock", 0, timeout=60)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10


def test_ctrl_c_interrupts_an_inspect_that_waits_on_the_network():
    """A server that accepts and never answers: the header read would wait for its timeout."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/model.safetensors"
    timer = _interrupt_after(0.3)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            tensorstream.inspect(url)
    finally:
        timer.cancel()
        listener.close()
    assert time.monotonic() - started < 10
    # The interpreter goes on: the next call works.
    with pytest.raises(tensorstream.StorageError):
        tensorstream.store.attach("/nonexistent/dir/x.sock", 0, timeout=0)


def test_ctrl_c_interrupts_a_prefetch_that_waits_on_the_network(tmp_path):
    """An S3 endpoint that accepts and never answers: the listing would wait for its timeout."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
    timer = _interrupt_after(0.3)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            tensorstream.prefetch("s3://models/llama/", tmp_path / "local", endpoint_url=endpoint,
                                  anonymous=True)
    finally:
        timer.cancel()
        listener.close()
    assert time.monotonic() - started < 10
    assert not (tmp_path / "local").exists() or not any((tmp_path / "local").iterdir())


_WORKER = r"""
import hashlib, sys
import tensorstream, torch

attached = tensorstream.store.attach(sys.argv[1], int(sys.argv[2]))

def digest():
    total = hashlib.sha256()
    for name in sorted(attached.weights):
        tensor = attached.weights[name].contiguous().reshape(-1)
        total.update(tensor.view(torch.uint8).numpy().tobytes())
    return total.hexdigest()

print(attached.generation, digest(), flush=True)
sys.stdin.readline()
print(attached.generation, digest(), flush=True)
"""


def _serve(cli, model, socket_path, ready):
    process = subprocess.Popen(
        [cli, "serve", str(model), "--tp", "2", "--socket", str(socket_path),
         "--ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for(lambda: ready.exists(), process, "the store server was not ready")
    return process


def _wait_for(condition, process, what, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.02)


def _digest(attached):
    total = hashlib.sha256()
    for name in sorted(attached.weights):
        total.update(tensor_bytes(attached.weights[name]))
    return total.hexdigest()


def _invert_tensor_data(path):
    """A new version of the model in place: every tensor byte inverted, renamed over the old."""
    data = bytearray(path.read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]
    data[start:] = bytes(255 - byte for byte in data[start:])
    path.with_suffix(".next").write_bytes(data)
    os.replace(path.with_suffix(".next"), path)


def test_a_reload_serves_the_new_version_while_eight_worker_processes_keep_their_bytes(
        tmp_path, cli):
    """SIGHUP, then `tensorstream reload`: each a new generation in new memory, which new
    attaches get byte for byte as a fresh server serves it, while eight workers attached before
    keep theirs."""
    work = tmp_path / "store"
    work.mkdir(mode=0o700)
    subprocess.run([cli, "gen-model", str(work / "model")], check=True, capture_output=True)
    socket_path, ready = work / "store.sock", work / "ready.json"
    server = _serve(cli, work / "model", socket_path, ready)
    workers = [subprocess.Popen([sys.executable, "-c", _WORKER, str(socket_path), str(i % 2)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for i in range(8)]
    try:
        before = [worker.stdout.readline().split() for worker in workers]
        assert all(generation == "1" for generation, _ in before), before
        old = {rank: before[rank][1] for rank in range(2)}
        assert all(digest == old[i % 2] for i, (_, digest) in enumerate(before))

        _invert_tensor_data(work / "model" / "model.safetensors")
        server.send_signal(signal.SIGHUP)
        _wait_for(lambda: '"generation":2,' in ready.read_text(), server, "no generation 2")

        # The same bytes as a server started afresh on the new version.
        fresh_socket, fresh_ready = work / "fresh.sock", work / "fresh.json"
        fresh = _serve(cli, work / "model", fresh_socket, fresh_ready)
        try:
            for rank in range(2):
                reloaded = tensorstream.store.attach(socket_path, rank)
                assert reloaded.generation == 2
                assert _digest(reloaded) != old[rank]
                assert _digest(reloaded) == _digest(tensorstream.store.attach(fresh_socket, rank))
        finally:
            stop(fresh)

        for worker in workers:
            worker.stdin.write("\n")
            worker.stdin.flush()
        after = [worker.stdout.readline().split() for worker in workers]
        assert after == before
        for worker in workers:
            assert worker.wait(timeout=30) == 0

        reply = subprocess.run([cli, "reload", str(socket_path), "--json"], check=True,
                               capture_output=True, text=True).stdout
        assert json.loads(reply)["generation"] == 3
        assert tensorstream.store.attach(socket_path, 0).generation == 3
    finally:
        for worker in workers:
            worker.kill()
        stop(server)
