#!/usr/bin/env python3
"""Read once, broadcast to all: N ranks of one distributed stream against N independent streams.

    python3 bench/distributed_bench.py [--build build] [--ranks 4] [--runs 3]
                                       [--preset llama-7b-4layers]

Generates the checkpoint (`tensorstream gen-model --preset`, about 2.14 GB by default), serves it
from a loopback nginx whose access log records the bytes of every response (the tests' server,
tests/python/servers.py), and runs, in turns, `--runs` times each:

    alone        one `tensorstream stream URL` process: the time one stream takes here
    independent  N such processes at once, as N replicas each loading the model do today
    distributed  N processes of `tensorstream stream URL --world-size N --rank R --rendezvous ...`:
                 each reads a share of the tensors and receives the rest over the c10d group

For each run it prints a JSON line: the wall time from the first process's start to the last
one's exit, and the bytes nginx served (summed over its access log), also as a multiple of the
checkpoint. Then a table of the medians, with the ratio of each time to `alone`. Every process
drops the tensors as they arrive (`stream`), so memory stays bounded in all of them.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
from servers import Nginx, free_port  # noqa: E402


def served_bytes(log: pathlib.Path) -> int:
    """Bytes nginx sent, summed over its access log ('$request $status $body_bytes_sent')."""
    if not log.exists():
        return 0
    return sum(int(line.split()[-1]) for line in log.read_text().splitlines() if line.strip())


def run_processes(commands: list[list[str]]) -> float:
    """Starts every command at once and waits for all; the wall time. Fails on any failure."""
    start = time.monotonic()
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for command in commands]
    failures = []
    for command, process in zip(commands, processes):
        _, err = process.communicate()
        if process.returncode != 0:
            failures.append(f"{' '.join(command)}: exit {process.returncode}: {err.decode()}")
    if failures:
        raise SystemExit("distributed_bench: " + "; ".join(failures))
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="build directory with the tool")
    parser.add_argument("--ranks", type=int, default=4, help="processes (default 4)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (default 3)")
    parser.add_argument("--preset", default="llama-7b-4layers", help="gen-model preset")
    arguments = parser.parse_args()
    tool = pathlib.Path(arguments.build).resolve() / "tensorstream"
    if not tool.exists():
        parser.error(f"{tool} does not exist: build the tool first (cmake --build {arguments.build})")
    if arguments.ranks < 2 or arguments.runs < 1:
        parser.error("--ranks must be at least 2 and --runs at least 1")

    with tempfile.TemporaryDirectory(prefix="distributed_bench.") as work_dir:
        work = pathlib.Path(work_dir)
        subprocess.run([str(tool), "gen-model", str(work / "model"), "--preset", arguments.preset],
                       check=True, stdout=subprocess.DEVNULL)
        checkpoint = (work / "model" / "model.safetensors").stat().st_size
        nginx = Nginx(work / "model", work / "nginx")
        url = nginx.url + "/model.safetensors"
        stream = [str(tool), "stream", url]
        kinds = {
            "alone": lambda: [stream],
            "independent": lambda: [stream] * arguments.ranks,
            "distributed": lambda: (lambda port: [
                stream + ["--world-size", str(arguments.ranks), "--rank", str(rank),
                          "--rendezvous", f"tcp://127.0.0.1:{port}"]
                for rank in range(arguments.ranks)])(free_port()),
        }
        results: dict[str, list[tuple[float, int]]] = {kind: [] for kind in kinds}
        try:
            for run in range(arguments.runs):
                for kind, commands in kinds.items():
                    before = served_bytes(nginx.access_log)
                    seconds = run_processes(commands())
                    served = served_bytes(nginx.access_log) - before
                    results[kind].append((seconds, served))
                    print(json.dumps({"kind": kind, "run": run, "seconds": round(seconds, 3),
                                      "served_bytes": served,
                                      "served_x_checkpoint": round(served / checkpoint, 4)}),
                          flush=True)
        finally:
            nginx.close()

    alone = statistics.median(seconds for seconds, _ in results["alone"])
    print(f"\n{arguments.ranks} processes, checkpoint {checkpoint / 1e9:.2f} GB, "
          f"median of {arguments.runs}:")
    print(f"{'':12} {'seconds':>8} {'x alone':>8} {'served GB':>10} {'x checkpoint':>13}")
    for kind, runs in results.items():
        seconds = statistics.median(s for s, _ in runs)
        served = statistics.median(b for _, b in runs)
        print(f"{kind:12} {seconds:8.2f} {seconds / alone:8.2f} {served / 1e9:10.2f} "
              f"{served / checkpoint:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
