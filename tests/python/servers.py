"""Real servers on ephemeral loopback ports, for the tests and bench/python_bench.py: nginx
serving a directory, and s3rver (pinned under third_party/s3rver) with one bucket."""

from __future__ import annotations

import http.client
import pathlib
import re
import shutil
import socket
import subprocess
import time

NGINX = "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: pathlib.Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited at start: {log.read_text(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"server did not accept connections within 10 s: {log.read_text()}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Nginx:
    """nginx serving `root` on an ephemeral loopback port, with an access log of bytes sent."""

    def __init__(self, root: pathlib.Path, work: pathlib.Path, extra_config: str = ""):
        self.root = root
        work.mkdir(parents=True, exist_ok=True)
        self.access_log = work / "access.log"
        self.error_log = work / "error.log"
        for attempt in range(5):
            self.port = free_port()
            config = work / "nginx.conf"
            temps = "".join(f"  {kind}_temp_path {work / kind};\n"
                            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
            config.write_text(
                "daemon off;\nmaster_process off;\nworker_processes 1;\n"
                f"pid {work / 'nginx.pid'};\nerror_log {self.error_log} warn;\n"
                "events { worker_connections 1024; }\n"
                "http {\n"
                "  log_format bytes '$request $status $body_bytes_sent';\n"
                f"  access_log {self.access_log} bytes;\n"
                "  sendfile on;\n  keepalive_requests 100000;\n"
                "  default_type application/octet-stream;\n" + temps +
                f"  server {{\n    listen 127.0.0.1:{self.port};\n    root {root};\n"
                f"    {extra_config}\n  }}\n}}\n")
            self.process = subprocess.Popen(
                [NGINX, "-p", str(work), "-e", str(self.error_log), "-c", str(config)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_for_port(self.port, self.process, self.error_log)
                return
            except RuntimeError:
                stop(self.process)
                if "Address already in use" not in self.error_log.read_text(errors="replace"):
                    raise
        raise RuntimeError("nginx found no free port in 5 attempts")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop(self.process)


def announced_port(process: subprocess.Popen, log: pathlib.Path, pattern: bytes, name: str,
                   seconds: float) -> int:
    """The port a server started on port 0 announces in its log (the first group of
    `pattern`); stops it and raises with its log when it exits or stays silent for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_bytes())
        if match:
            return int(match.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.02)
    stop(process)
    raise RuntimeError(f"{name} did not start: {log.read_text(errors='replace')}")


class S3rver:
    """s3rver (pinned under third_party/s3rver) on an ephemeral loopback port, with one bucket."""

    def __init__(self, work: pathlib.Path, bucket: str, script: str):
        self.bucket = bucket
        (work / "data").mkdir(parents=True)
        self.log = work / "s3rver.log"
        with open(self.log, "wb") as log:
            # s3rver encrypts continuation tokens with DES, in OpenSSL 3's legacy provider.
            self.process = subprocess.Popen(
                [shutil.which("node") or "node", "--openssl-legacy-provider", script,
                 "-d", str(work / "data"), "-a", "127.0.0.1", "-p", "0",
                 "--configure-bucket", bucket], stdout=log, stderr=subprocess.STDOUT)
        self.port = announced_port(self.process, self.log,
                                   rb"S3rver listening on 127\.0\.0\.1:(\d+)", "s3rver", 20)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def put(self, key: str, path: pathlib.Path) -> None:
        """Uploads the file at `path` as `key`, streamed (s3rver takes anonymous PUTs)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            with open(path, "rb") as body:
                connection.request("PUT", f"/{self.bucket}/{key}", body=body,
                                   headers={"Content-Length": str(path.stat().st_size)})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"s3rver refused PUT {key}: HTTP {response.status}")
        finally:
            connection.close()

    def put_directory(self, directory: pathlib.Path, prefix: str) -> None:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                self.put(prefix + path.relative_to(directory).as_posix(), path)

    def close(self) -> None:
        stop(self.process)


class Azurite:
    """Azurite's blob service (pinned under third_party/azurite) on an ephemeral loopback port,
    its blobs in memory, seeded through the Azure SDK for Python: an independent client."""

    account = "devstoreaccount1"
    key = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
           "KBHBeksoGMGw==")

    def __init__(self, work: pathlib.Path, script: str):
        work.mkdir(parents=True)
        self.log = work / "azurite.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [shutil.which("node") or "node", script, "--blobHost", "127.0.0.1",
                 "--blobPort", "0", "--inMemoryPersistence", "--skipApiVersionCheck",
                 "--disableTelemetry", "--disableProductStyleUrl"],
                stdout=log, stderr=subprocess.STDOUT)
        self.port = announced_port(self.process, self.log,
                                   rb"successfully listens on http://127\.0\.0\.1:(\d+)",
                                   "Azurite", 30)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.account}"

    @property
    def connection_string(self) -> str:
        return (f"AccountName={self.account};AccountKey={self.key};"
                f"BlobEndpoint={self.endpoint}")

    def put_directory(self, directory: pathlib.Path, container: str, prefix: str) -> None:
        """Creates `container` if need be and uploads every file under `directory` into it."""
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob import BlobServiceClient
        service = BlobServiceClient.from_connection_string(self.connection_string)
        try:
            service.create_container(container)
        except ResourceExistsError:
            pass
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                with open(path, "rb") as data:
                    service.get_blob_client(
                        container, prefix + path.relative_to(directory).as_posix()).upload_blob(
                            data, overwrite=True)

    def close(self) -> None:
        stop(self.process)
