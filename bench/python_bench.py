#!/usr/bin/env python3
"""The Python binding against the C++ tool and against Python loaders, on one checkpoint.

    /usr/bin/python3 bench/python_bench.py [--build build] [--runs 3] [--preset llama-7b-4layers]
                                           [--pair]

Generates the checkpoint (`tensorstream gen-model --preset`, about 2.14 GB by default), serves it
from a loopback nginx and a loopback s3rver (the tests' servers, tests/python/servers.py), and
loads it, in turns, `--runs` times each, every load in a fresh process:

    cli       `tensorstream stream URL` (C++; no tensors made), the reference, as its --json
              summary measures the stream
    binding   tensorstream.SafeTensorsStreamer(URL).get_tensors(), every tensor released at the
              end of the loop body (`del tensor`), as the CLI releases it
    binding, tensor kept a loop
              the same loop without `del`: the loop variable holds each tensor until the next
              arrives, so the stream cannot reuse its memory for the reads meanwhile
    seed      a pure-Python loader of the Python original's design: the header by two range reads,
              then 16 MiB range reads on 32 threads (http.client; botocore for s3://, signed)
              into one buffer per tensor, torch.frombuffer(...).view(shape) when it is complete
    download  the file downloaded to disk (`aws s3 cp` for s3:// where the AWS CLI is installed,
              curl otherwise), then each tensor read from disk (unbuffered) into a buffer of its
              own and wrapped with torch.frombuffer, as without streaming

With --pair, only the CLI and the binding, which of the two goes first alternating from run to
run: on a VM whose host takes freed memory back, a load's speed depends on what ran before it.

Every loader's time is its load alone, without the process's start and imports; CPU seconds are
the process's (and for downloads, the downloader's). Prints one JSON line per load, a table of
the best run of each, with GB/s, CPU seconds per GB and the ratio to the CLI, and the median of
the binding's per-run ratios to the CLI. Tensors are dropped as they arrive in every Python
loader, so memory stays bounded in all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
from servers import Nginx, S3rver  # noqa: E402

# Each Python loader is (setup, load): run in a fresh interpreter per load, with the clocks
# started between the two, so that {"seconds": wall, "cpu": seconds, "bytes": N} measure the load
# alone, after its imports. `load` leaves the bytes it loaded in `total`.
CLOCK = r"""
import json, resource, time
start, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
"""
REPORT = r"""
end = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.monotonic() - start, "bytes": total,
                  "cpu": end.ru_utime + end.ru_stime - cpu.ru_utime - cpu.ru_stime}))
"""
# The dtypes of the checkpoint, for the loaders that parse headers themselves.
DTYPES = r"""
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
          "I32": torch.int32, "U8": torch.uint8, "I8": torch.int8, "BOOL": torch.bool}
"""
BINDING = (r"""
import json, resource, sys, time
import tensorstream
""", r"""total = 0
for name, tensor in tensorstream.SafeTensorsStreamer(sys.argv[1], **json.loads(sys.argv[2])).get_tensors():
    total += tensor.numel() * tensor.element_size()
    if sys.argv[3] == "release":
        del tensor
""")

SEED = (r"""
import concurrent.futures, http.client, json, resource, struct, sys, threading, time, urllib.parse
import torch

CHUNK, CONCURRENCY = 16 << 20, 32
url, endpoint = sys.argv[1], sys.argv[2]
local = threading.local()

if url.startswith("s3://"):
    import botocore.config, botocore.session
    bucket, key = url[5:].split("/", 1)
    session = botocore.session.get_session()
    config = botocore.config.Config(max_pool_connections=CONCURRENCY)
    client = session.create_client("s3", endpoint_url=endpoint, region_name="us-east-1",
                                   config=config)

    def read(begin, end, into):
        body = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={begin}-{end - 1}")["Body"]
        into[:] = body.read()
else:
    parsed = urllib.parse.urlsplit(url)

    def read(begin, end, into):
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection(parsed.hostname, parsed.port)
        local.connection.request("GET", parsed.path, headers={"Range": f"bytes={begin}-{end - 1}"})
        response = local.connection.getresponse()
        assert response.status == 206, response.status
        view, done = into, 0
        while done < len(view):
            done += response.readinto(view[done:])
        response.read()

""" + DTYPES, r"""prefix = bytearray(8)
read(0, 8, memoryview(prefix))
length = struct.unpack("<Q", prefix)[0]
header_bytes = bytearray(length)
read(8, 8 + length, memoryview(header_bytes))
header = json.loads(header_bytes)
header.pop("__metadata__", None)
data_start = 8 + length
total = 0
with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
    pending = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        buffer = bytearray(end - begin)
        view = memoryview(buffer)
        chunks = [pool.submit(read, data_start + offset, data_start + min(offset + CHUNK, end - begin),
                              view[offset:min(offset + CHUNK, end - begin)])
                  for offset in range(0, end - begin, CHUNK)]
        pending[name] = (entry, buffer, chunks)
    for name, (entry, buffer, chunks) in pending.items():
        for chunk in chunks:
            chunk.result()
        tensor = torch.frombuffer(buffer, dtype=DTYPES[entry["dtype"]]).view(entry["shape"])
        total += tensor.numel() * tensor.element_size()
        del tensor, buffer
        pending[name] = None
""")

LOAD_FILE = (r"""
import json, mmap, resource, struct, sys, time
import torch
""" + DTYPES, r"""total = 0
with open(sys.argv[1], "rb", buffering=0) as file:
    length = struct.unpack("<Q", file.read(8))[0]
    header = json.loads(file.read(length))
    header.pop("__metadata__", None)
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        file.seek(8 + length + begin)
        buffer = bytearray(end - begin)
        view, done = memoryview(buffer), 0
        while done < len(view):
            done += file.readinto(view[done:])
        tensor = torch.frombuffer(buffer, dtype=DTYPES[entry["dtype"]]).view(entry["shape"])
        total += tensor.numel() * tensor.element_size()
""")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command, env) -> dict:
    """Runs `command`; its wall and CPU time as a whole."""
    cpu, start = children_cpu(), time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {result.stderr.strip()[-2000:]}")
    return {"seconds": time.monotonic() - start, "cpu": children_cpu() - cpu,
            "output": result.stdout}


def python_load(loader, arguments, env) -> dict:
    """A Python loader's own measurement of its load (imports excluded)."""
    setup, load = loader
    script = setup + CLOCK + load + REPORT
    run = timed([sys.executable, "-c", script, *arguments], env)
    return json.loads(run["output"].strip().splitlines()[-1])


def report(run, source, loads, best) -> None:
    """Prints a JSON line per load of one run and keeps the best of each loader in `best`."""
    for loader, measured in loads.items():
        line = {"run": run, "source": source, "loader": loader,
                "seconds": round(measured["seconds"], 3), "cpu": round(measured["cpu"], 3)}
        print(json.dumps(line), flush=True)
        key = (source, loader)
        if key not in best or measured["seconds"] < best[key]["seconds"]:
            best[key] = dict(measured)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build directory")
    parser.add_argument("--runs", type=int, default=3, help="loads of each kind per source")
    parser.add_argument("--preset", default="llama-7b-4layers", help="gen-model preset")
    parser.add_argument("--pair", action="store_true",
                        help="only the CLI and the binding, in alternating order")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    build = pathlib.Path(args.build).resolve()
    cli = str(build / "tensorstream")
    if not os.access(cli, os.X_OK) or not (build / "python" / "tensorstream").is_dir():
        parser.error(f"no built tool and Python package under {build}: build first "
                     "(bash scripts/build.sh) or name the build directory with --build")
    aws = shutil.which("aws", path="/usr/bin") or shutil.which("aws")
    env = dict(os.environ, PYTHONPATH=str(build / "python"), PYTHONDONTWRITEBYTECODE="1",
               AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER",
               AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    for variable in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(variable, None)

    with tempfile.TemporaryDirectory(prefix="python_bench.") as work:
        work = pathlib.Path(work)
        model = work / "www" / "model"
        generated = subprocess.run([cli, "gen-model", str(model), "--preset", args.preset],
                                   capture_output=True, text=True)
        if generated.returncode != 0:
            reason = generated.stderr.strip().splitlines()[-1] if generated.stderr.strip() else ""
            parser.error(reason.removeprefix("tensorstream: error: ") or
                         f"gen-model --preset {args.preset} failed")
        file = model / "model.safetensors"
        size = file.stat().st_size
        print(f"# checkpoint: {args.preset}, {size / 1e9:.2f} GB; {os.cpu_count()} cores",
              flush=True)
        nginx = Nginx(work / "www", work / "nginx")
        s3rver = S3rver(work / "s3rver", "models",
                        str(ROOT / "third_party/s3rver/node_modules/s3rver/bin/s3rver.js"))
        try:
            s3rver.put("model/model.safetensors", file)
            sources = {"nginx": (f"{nginx.url}/model/model.safetensors", {}),
                       "s3rver": ("s3://models/model/model.safetensors",
                                  {"endpoint_url": s3rver.endpoint})}
            best = {}
            ratios = {source: [] for source in sources}  # the binding's to the CLI, per run
            for run in range(args.runs):
                for source, (url, options) in sources.items():
                    endpoint = options.get("endpoint_url", "")
                    loads = {}
                    cli_command = [cli, "stream", url, "--json"]
                    if endpoint:
                        cli_command += ["--endpoint-url", endpoint]

                    def load_cli():
                        output = timed(cli_command, env)["output"]
                        summary = json.loads(output.splitlines()[-1])["summary"]
                        loads["cli"] = {"seconds": summary["seconds"],
                                        "cpu": summary["cpu_seconds"]}

                    def load_binding():
                        loads["binding"] = python_load(
                            BINDING, [url, json.dumps(options), "release"], env)

                    first, second = (load_binding, load_cli) if run % 2 else (load_cli, load_binding)
                    first()
                    second()
                    ratios[source].append(loads["cli"]["seconds"] / loads["binding"]["seconds"])
                    if args.pair:
                        report(run, source, loads, best)
                        continue
                    loads["binding, tensor kept a loop"] = python_load(
                        BINDING, [url, json.dumps(options), "keep"], env)
                    loads["seed"] = python_load(SEED, [url, endpoint], env)
                    downloaded = work / "download.safetensors"
                    if source == "s3rver" and aws:
                        fetch = timed([aws, "s3", "cp", "--endpoint-url", endpoint, "--only-show-errors",
                                       url, str(downloaded)], env)
                        kind = "aws s3 cp, then load"
                    else:
                        http_url = url if source == "nginx" else f"{endpoint}/models/model/model.safetensors"
                        fetch = timed(["curl", "-sSf", "-o", str(downloaded), http_url], env)
                        kind = "curl to disk, then load"
                    load = python_load(LOAD_FILE, [str(downloaded)], env)
                    downloaded.unlink()
                    loads["download"] = {"seconds": fetch["seconds"] + load["seconds"],
                                         "cpu": fetch["cpu"] + load["cpu"], "kind": kind}
                    report(run, source, loads, best)
        finally:
            nginx.close()
            s3rver.close()

    print("\n| source | loader | GB/s | CPU s/GB | vs CLI |\n|---|---|---:|---:|---:|")
    for (source, loader), measured in best.items():
        reference = best[(source, "cli")]["seconds"]
        name = measured.get("kind", loader)
        print(f"| {source} | {name} | {size / measured['seconds'] / 1e9:.2f} | "
              f"{measured['cpu'] / (size / 1e9):.2f} | {reference / measured['seconds']:.2f} |")
    for source, runs in ratios.items():
        print(f"\n{source}: the binding's speed over the CLI's, run by run: "
              f"{', '.join(f'{ratio:.2f}' for ratio in runs)}; median {statistics.median(runs):.2f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader went away (`| head`): the servers are closed; stop quietly, as on SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
