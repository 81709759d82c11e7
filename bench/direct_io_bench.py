#!/usr/bin/env python3
"""Cold-cache reads of a local checkpoint: direct I/O against the page cache, next to `dd`.

    sudo python3 bench/direct_io_bench.py MODEL.safetensors [--build build] [--runs 5]
        [--runai-driver DRIVER --runai-plan PLAN]

Before every run the page cache is dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`, hence root),
so each run reads the file from the device. The runs interleave, in alternating order:

    ts direct     tensorstream stream MODEL --json -q --direct-io on   (defaults: 32 x 16 MiB)
    ts buffered   the same with --direct-io off
    dd direct     dd iflag=direct bs=16M: what one sequential reader gets from the device
    dd buffered   dd bs=16M through the page cache
    runai         with --runai-driver and --runai-plan: the Run:ai Model Streamer, built and driven
                  as ../shared/peers/runai/ describes, at its defaults (16 x 2 MiB)

Each run prints a JSON line (wall, user and system seconds of the process, GB/s over the stream's
own seconds where the tool reports them). Then the medians of GB/s and CPU seconds per GB, and the
ratios of `ts direct` to `ts buffered`, paired per round.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def timed(command: list[str], env: dict[str, str] | None = None) -> dict:
    """Runs `command` under /usr/bin/time; its wall, user and system seconds and its stdout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        process = subprocess.run(["/usr/bin/time", "-o", times.name, "-f", "%e %U %S"] + command,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        wall, user, system = (float(value) for value in times.read().split()[-3:])
    if process.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {process.stderr[-500:]}")
    return {"wall_s": wall, "cpu_s": user + system, "stdout": process.stdout,
            "stderr": process.stderr}


def configurations(args: argparse.Namespace) -> dict:
    model = str(args.model)
    cli = str(args.build / "tensorstream")

    def tensorstream(mode: str):
        def run() -> dict:
            result = timed([cli, "stream", model, "--json", "-q", "--direct-io", mode])
            summary = json.loads(result["stdout"].splitlines()[-1])["summary"]
            return {**result, "stream_s": summary["seconds"], "bytes": summary["bytes"],
                    "direct_bytes": summary.get("direct_bytes", 0)}
        return run

    def dd(flags: list[str]):
        def run() -> dict:
            result = timed(["dd", "if=" + model, "of=/dev/null", "bs=16M"] + flags)
            seconds = result["wall_s"]
            for line in result["stderr"].splitlines():
                if " s, " in line:
                    seconds = float(line.split(" s, ")[0].split(",")[-1])
            return {**result, "stream_s": seconds, "bytes": args.model.stat().st_size}
        return run

    runs = {"ts direct": tensorstream("on"), "ts buffered": tensorstream("off"),
            "dd direct": dd(["iflag=direct"]), "dd buffered": dd([])}
    if args.runai_driver:
        def runai() -> dict:
            result = timed([str(args.runai_driver), str(args.runai_plan)], dict(os.environ))
            report = json.loads([line for line in result["stdout"].splitlines()
                                 if line.startswith("{")][-1])
            return {**result, "stream_s": report["seconds"], "bytes": report["bytes"]}
        runs["runai"] = runai
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=pathlib.Path)
    parser.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--runai-driver", type=pathlib.Path)
    parser.add_argument("--runai-plan", type=pathlib.Path)
    args = parser.parse_args()
    runs = configurations(args)
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for round_number in range(args.runs):
        order = list(runs) if round_number % 2 == 0 else list(reversed(runs))
        for name in order:
            drop_caches()
            result = runs[name]()
            record = {"round": round_number, "name": name, "wall_s": result["wall_s"],
                      "cpu_s": result["cpu_s"],
                      "gb_per_s": result["bytes"] / result["stream_s"] / 1e9,
                      "cpu_s_per_gb": result["cpu_s"] / (result["bytes"] / 1e9)}
            if "direct_bytes" in result:
                record["direct_bytes"] = result["direct_bytes"]
            results[name].append(record)
            print(json.dumps(record), flush=True)

    print(f"\nmedians of {args.runs} cold runs, {args.model.stat().st_size / 1e9:.2f} GB")
    print(f"{'':12} {'GB/s':>6} {'CPU s/GB':>9}")
    for name, records in results.items():
        print(f"{name:12} {statistics.median(r['gb_per_s'] for r in records):6.2f} "
              f"{statistics.median(r['cpu_s_per_gb'] for r in records):9.3f}")
    pairs = list(zip(results["ts direct"], results["ts buffered"]))
    speed = statistics.median(d["gb_per_s"] / b["gb_per_s"] for d, b in pairs)
    cpu = statistics.median(d["cpu_s_per_gb"] / b["cpu_s_per_gb"] for d, b in pairs)
    print(f"ts direct / ts buffered, paired per round: {speed:.2f}x the GB/s, "
          f"{cpu:.2f}x the CPU s/GB")


if __name__ == "__main__":
    main()
