"""Streaming after os.fork(): a child has none of its parent's threads, so a streamer of the
parent fails there at once with StateError, while a streamer made in the child works, as in
PyTorch's DataLoader workers and multiprocessing pools."""

from __future__ import annotations

import hashlib
import os
import signal
import time

import torch
import torch.utils.data

import tensorstream
from conftest import assert_same_tensors, tensor_bytes

CHILD_DEADLINE_S = 60


def wait_for(child: int) -> int:
    """The child's exit status; a child still running after CHILD_DEADLINE_S is killed and
    reported as a hang (-1)."""
    deadline = time.monotonic() + CHILD_DEADLINE_S
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return -1


def test_a_forked_child_streams_anew_and_its_parents_streamer_fails_at_once(model_dir, tmp_path):
    directory, oracle = model_dir
    assert_same_tensors(dict(tensorstream.SafeTensorsStreamer(directory).get_tensors()), oracle)
    # Mid-stream at the fork, with a wait of the extension's runner behind it.
    held = tensorstream.SafeTensorsStreamer(directory, chunk_size=64 << 10)
    held_tensors = held.get_tensors()
    next(held_tensors)
    report = tmp_path / "child.txt"

    child = os.fork()
    if child == 0:
        # Only the exit status and the report leave the child.
        code = 1
        try:
            try:
                next(held_tensors)
                message = "the parent's streamer yielded a tensor in the child"
            except tensorstream.StateError as error:
                message = str(error)
            held.close()
            streamed = dict(tensorstream.SafeTensorsStreamer(directory).get_tensors())
            assert_same_tensors(streamed, oracle)
            report.write_text(message)
            code = 0
        finally:
            os._exit(code)

    assert wait_for(child) == 0, "the child failed or hung"
    assert report.read_text() == (
        f"{directory}: this streamer was made in process {os.getpid()} before os.fork(); its "
        f"threads stayed there: make a new streamer in this process ({child})")
    # The parent's streamer goes on where it was.
    assert len(list(held_tensors)) == len(oracle) - 1


class StreamedDigests(torch.utils.data.Dataset):
    """Each item streams the whole checkpoint, as a dataset that reads shards would."""

    def __init__(self, directory: str):
        self.directory = directory

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> str:
        return digest(tensorstream.SafeTensorsStreamer(self.directory).get_tensors())


def digest(tensors) -> str:
    """One SHA-256 of every tensor's name and bytes, in name order."""
    hash_ = hashlib.sha256()
    for name, tensor in sorted(tensors, key=lambda item: item[0]):
        hash_.update(name.encode() + b"\0" + tensor_bytes(tensor))
    return hash_.hexdigest()


def test_dataloader_workers_forked_after_a_stream_stream_too(model_dir):
    directory, oracle = model_dir
    expected = digest(oracle.items())
    assert sum(1 for _ in tensorstream.SafeTensorsStreamer(directory).get_tensors()) == len(oracle)
    loader = torch.utils.data.DataLoader(StreamedDigests(str(directory)), batch_size=None,
                                         num_workers=2, multiprocessing_context="fork",
                                         timeout=CHILD_DEADLINE_S)
    assert list(loader) == [expected] * 4
