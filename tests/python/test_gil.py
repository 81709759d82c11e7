"""The GIL is released while the library waits: other Python threads run during a stream."""

from __future__ import annotations

import http.server
import re
import threading

import torch

import tensorstream
from conftest import assert_same_tensors, random_tensors, write_safetensors


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves one file with HEAD and single-range GET: Python code that needs the GIL to answer."""

    protocol_version = "HTTP/1.1"
    data = b""

    def log_message(self, *args):
        pass

    def send_body(self, include_body: bool) -> None:
        begin, end = 0, len(self.data) - 1
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match:
            begin = int(match.group(1))
            end = min(int(match.group(2) or end), len(self.data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {begin}-{end}/{len(self.data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - begin + 1))
        self.end_headers()
        if include_body:
            self.wfile.write(self.data[begin:end + 1])

    def do_HEAD(self):
        self.send_body(False)

    def do_GET(self):
        self.send_body(True)


def test_a_server_in_this_interpreter_can_serve_the_stream(tmp_path):
    # Were the GIL held while next() waits, this server's threads could not answer, and the
    # stream would time out instead of completing.
    oracle = random_tensors(7, 12)
    write_safetensors(tmp_path / "model.safetensors", oracle)
    handler = type("Handler", (RangeHandler,), {"data": (tmp_path / "model.safetensors").read_bytes()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/model.safetensors"
        streamer = tensorstream.SafeTensorsStreamer(url, chunk_size=64 << 10, max_retries=0,
                                                    read_timeout=20)
        assert_same_tensors(dict(streamer.get_tensors()), oracle)
    finally:
        server.shutdown()
        server.server_close()


def test_a_python_thread_keeps_running_while_next_waits(tmp_path, nginx_factory):
    write_safetensors(tmp_path / "slow" / "model.safetensors",
                      {"slow": torch.zeros(1 << 16, dtype=torch.uint8)})
    server = nginx_factory(tmp_path, "location /slow/ { limit_rate 64k; }")
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        streamer = tensorstream.SafeTensorsStreamer(f"{server.url}/slow/model.safetensors")
        before = counter[0]
        (name, tensor), = streamer.get_tensors()
        during = counter[0] - before
    finally:
        stop.set()
        thread.join()
    assert name == "slow" and tensor.numel() == 1 << 16
    # About a second of waiting: a thread that could run counts into the millions; one locked
    # out by a held GIL would not count at all.
    assert during > 10_000, during
