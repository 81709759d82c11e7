"""`async for` over a streamer: on the running loop, woken by the library's threads, cancelled
with its task."""

from __future__ import annotations

import asyncio
import selectors
import time

import pytest
import torch

import tensorstream
from conftest import assert_same_tensors, write_safetensors


async def collect(streamer):
    return {name: tensor async for name, tensor in streamer}


def test_async_for_streams_every_tensor_byte_exact(model_dir, nginx_factory):
    directory, oracle = model_dir
    server = nginx_factory(directory.parent)
    streamed = asyncio.run(collect(tensorstream.SafeTensorsStreamer(f"{server.url}/model/")))
    assert_same_tensors(streamed, oracle)


def test_two_streams_share_one_loop(model_dir):
    directory, oracle = model_dir

    async def both():
        return await asyncio.gather(collect(tensorstream.SafeTensorsStreamer(directory)),
                                    collect(tensorstream.SafeTensorsStreamer(directory)))

    for streamed in asyncio.run(both()):
        assert_same_tensors(streamed, oracle)


class CountingSelector(selectors.DefaultSelector):
    """Counts the loop's waits for events: a loop that polls would wait many times."""

    def __init__(self):
        super().__init__()
        self.waits = 0

    def select(self, timeout=None):
        self.waits += 1
        return super().select(timeout)


def slow_server(tmp_path, nginx_factory, size=1 << 17):
    """nginx sending a checkpoint of one `size`-byte tensor at 64 KiB/s."""
    write_safetensors(tmp_path / "slow" / "model.safetensors",
                      {"slow": torch.arange(size, dtype=torch.uint8)})
    server = nginx_factory(tmp_path, "location /slow/ { limit_rate 64k; }")
    return f"{server.url}/slow/model.safetensors", server


def test_the_library_wakes_the_loop_when_a_tensor_is_ready_without_polling(tmp_path, nginx_factory):
    url, _ = slow_server(tmp_path, nginx_factory)
    selector = CountingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    try:
        streamer = tensorstream.SafeTensorsStreamer(url)
        start = time.monotonic()
        name, tensor = loop.run_until_complete(streamer.__anext__())
        waited = time.monotonic() - start
    finally:
        loop.close()
    assert name == "slow" and torch.equal(tensor, torch.arange(1 << 17, dtype=torch.uint8))
    assert waited > 0.5  # the tensor took its time: the loop had the chance to poll
    # A handful of waits (the loop's own start, the wake-up), not one per polling interval.
    assert selector.waits < 10, selector.waits


def test_cancelling_the_task_cancels_the_stream(tmp_path, nginx_factory):
    url, server = slow_server(tmp_path, nginx_factory, size=4 << 20)

    async def cancel_while_waiting():
        streamer = tensorstream.SafeTensorsStreamer(url, chunk_size=1 << 20)
        task = asyncio.ensure_future(streamer.__anext__())
        done, _ = await asyncio.wait({task}, timeout=0.3)
        assert not done  # still waiting, and the loop went on meanwhile
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return streamer

    streamer = asyncio.run(cancel_while_waiting())
    assert streamer.closed
    with pytest.raises(tensorstream.StateError):
        asyncio.run(streamer.__anext__())
    # nginx logs a request when its connection ends: every range read ended early, long before
    # the minute the throttled transfer would take.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [line.split() for line in server.access_log.read_text().splitlines()]
        reads = [line for line in lines if "/slow/model.safetensors" in line[1]]
        if len(reads) >= 5:  # the header read and the four chunks
            break
        time.sleep(0.05)
    sent = sum(int(line[-1]) for line in reads)
    assert len(reads) >= 5, reads
    assert sent < 1 << 20, sent


def test_a_stream_error_is_raised_in_the_awaiting_task(tmp_path):
    async def first():
        async for item in tensorstream.SafeTensorsStreamer(tmp_path / "absent.safetensors"):
            return item

    with pytest.raises(FileNotFoundError):
        asyncio.run(first())


def test_async_with_closes_the_stream(model_dir):
    directory, _ = model_dir

    async def take_one():
        async with tensorstream.SafeTensorsStreamer(directory) as streamer:
            async for item in streamer:
                return streamer, item

    streamer, (name, _) = asyncio.run(take_one())
    assert streamer.closed and name
