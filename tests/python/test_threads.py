"""Streamers used from several threads, closed under a waiter, and left running at exit: errors
a caller can handle, never a crash or a lost tensor."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import tensorstream
from conftest import write_safetensors


def test_closing_from_another_thread_while_one_iterates_never_crashes(model_dir):
    directory, oracle = model_dir
    outcomes = {"completed": 0, "cancelled": 0}
    for round_ in range(200):
        streamer = tensorstream.SafeTensorsStreamer(directory, chunk_size=64 << 10)
        failure = []

        def iterate():
            try:
                for _ in streamer.get_tensors():
                    pass
                outcomes["completed"] += 1
            except (tensorstream.CancelledError, tensorstream.StateError):
                outcomes["cancelled"] += 1
            except BaseException as error:  # anything else fails the test below
                failure.append(error)

        thread = threading.Thread(target=iterate)
        thread.start()
        time.sleep(random.uniform(0, 0.004))
        streamer.close()
        thread.join()
        assert not failure, failure
    assert outcomes["completed"] + outcomes["cancelled"] == 200


def slow_model(tmp_path, nginx_factory):
    """A checkpoint of a small and a 128 KiB tensor, sent at 64 KiB/s."""
    write_safetensors(tmp_path / "slow" / "model.safetensors",
                      {"small": torch.arange(4), "large": torch.zeros(1 << 17, dtype=torch.uint8)})
    server = nginx_factory(tmp_path, "location /slow/ { limit_rate 64k; }")
    return f"{server.url}/slow/model.safetensors"


def test_a_closed_blocking_wait_raises_cancelled_error(tmp_path, nginx_factory):
    streamer = tensorstream.SafeTensorsStreamer(slow_model(tmp_path, nginx_factory),
                                                read_order="file_order", chunk_size=1 << 20)
    raised = []

    def iterate():
        try:
            for _ in streamer.get_tensors():
                pass
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=iterate)
    thread.start()
    time.sleep(0.3)
    streamer.close()
    thread.join()
    assert len(raised) == 1 and type(raised[0]) is tensorstream.CancelledError, raised
    assert "the streamer was closed while next() waited" in str(raised[0])


def test_a_stream_closed_by_another_task_ends_its_consumer_with_cancelled_error(tmp_path,
                                                                               nginx_factory):
    url = slow_model(tmp_path, nginx_factory)

    async def main():
        streamer = tensorstream.SafeTensorsStreamer(url)

        async def consume():
            async for _ in streamer:
                pass

        consumer = asyncio.ensure_future(consume())
        await asyncio.sleep(0.3)
        await streamer.aclose()
        with pytest.raises(tensorstream.CancelledError):
            await consumer
        assert not consumer.cancelled()  # not mistaken for a cancellation of the task

    asyncio.run(main())


def test_a_tensor_whose_event_loop_closed_is_kept_for_the_next_call(tmp_path, nginx_factory):
    streamer = tensorstream.SafeTensorsStreamer(slow_model(tmp_path, nginx_factory),
                                                read_order="file_order")
    loop = asyncio.new_event_loop()
    loop.create_task(streamer.__anext__())
    loop.run_until_complete(asyncio.sleep(0.05))  # the wait has started
    loop.close()
    # The tensors arrive with nobody to take them: every byte lands (about 2 s at 64 KiB/s).
    deadline = time.monotonic() + 60
    while (stats := streamer.stats())["bytes"] < stats["total_bytes"] or not stats["total_bytes"]:
        assert time.monotonic() < deadline, stats
        time.sleep(0.01)
    # The abandoned wait settles on the library's thread, which a loaded machine may run a moment
    # after the last byte: until then a call is refused as a second waiter, as documented.
    while True:
        try:
            names = sorted(name for name, _ in streamer.get_tensors())
            break
        except tensorstream.errors.StateError as error:
            assert "another next() is still waiting" in str(error)
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert names == ["large", "small"]


@pytest.mark.parametrize("mode", ["blocking", "async"])
def test_the_interpreter_exits_cleanly_under_a_daemon_thread_that_streams(tmp_path, nginx_factory,
                                                                          mode):
    # One daemon thread waits on a slow stream, another streams a one-tensor checkpoint over and
    # over, so that exit finds waits pending, completing and starting, and streamers being
    # destroyed. The tensors are kept: PyTorch's own tensor deallocation releases and retakes
    # the GIL inside a destructor, which aborts a daemon thread at exit whatever made the tensor.
    url = slow_model(tmp_path, nginx_factory)
    write_safetensors(tmp_path / "one" / "model.safetensors", {"one": torch.ones(4)})
    script = textwrap.dedent(f"""
        import asyncio, sys, threading, time, tensorstream
        kept = []
        def blocking(url, repeat):
            while True:
                kept.extend(tensorstream.SafeTensorsStreamer(url, chunk_size=4096).get_tensors())
                if not repeat:
                    return
        def run_async(url, repeat):
            async def consume():
                while True:
                    async for item in tensorstream.SafeTensorsStreamer(url, chunk_size=4096):
                        kept.append(item)
                    if not repeat:
                        return
            asyncio.run(consume())
        for url, repeat in (({url!r}, False), ({str(tmp_path / "one")!r}, True)):
            threading.Thread(target={mode == 'blocking' and 'blocking' or 'run_async'},
                             args=(url, repeat), daemon=True).start()
        time.sleep(float(sys.argv[1]))
    """)
    for delay in ("0.1", "0.2", "0.3", "0.4", "0.5"):
        result = subprocess.run([sys.executable, "-c", script, delay], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr


def test_a_callback_that_runs_at_exit_ends_before_the_interpreter_finalizes(tmp_path):
    # The callback of an asyncio wait runs on the extension's thread and drops the GIL inside
    # (its write to the loop's self-pipe): were the interpreter finalizing when it takes the GIL
    # back, the thread would be ended mid-call and release the call's objects without the GIL.
    # The streamer is gone, so closing live streamers at exit does not wait for it.
    write_safetensors(tmp_path / "one" / "model.safetensors", {"one": torch.ones(4)})
    script = textwrap.dedent(f"""
        import time, tensorstream
        from tensorstream import _tensorstream
        def on_done(result, error):
            time.sleep(0.5)
            print("delivered", type(error).__name__, flush=True)
            return True
        streamer = _tensorstream._Streamer({str(tmp_path / "one")!r}, "", {{}})
        streamer.next_async(on_done)
        del streamer
        time.sleep(0.1)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout) == (0, "delivered CancelledError\n"), result.stderr
