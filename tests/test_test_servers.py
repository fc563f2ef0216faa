"""The suite's servers start even when a port found free is taken before they bind it.

A port is picked free, closed, then handed to the server; in between, any process's outgoing connection may
draw it from the same range. These tests take the port in between on purpose: the server must start again
on another one, not fail the tests that use it.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import lab, s3server


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port some other process listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_seaweedfs_starts_on_other_ports_when_one_it_was_given_is_taken(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = s3server._free_ports
    handed: list[list[int]] = []

    def filer_port_taken_first(count: int) -> list[int]:
        ports = real(count)
        if not handed:
            ports[6] = taken_port  # the filer's: weed binds it after the master's and the volume server's
        handed.append(ports)
        return ports

    monkeypatch.setattr(s3server, "_free_ports", filer_port_taken_first)
    with s3server.seaweedfs(tmp_path / "weed", volumes=2) as server:
        assert len(handed) == 2, "the start that lost its port was tried again"
        assert server.endpoint == f"http://127.0.0.1:{handed[1][0]}"
        server.create_bucket("after-a-retry")  # the filer answers: the server is whole


def test_jupyter_starts_on_another_port_when_its_own_is_taken(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("jupyterlab")
    real = lab.free_port
    handed: list[int] = []

    def taken_first() -> int:
        port = taken_port if not handed else real()
        handed.append(port)
        return port

    monkeypatch.setattr(lab, "free_port", taken_first)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    with lab.jupyter_lab(tmp_path, notebooks, {}) as url:
        assert len(handed) == 2, "the start that lost its port was tried again"
        assert url == f"http://127.0.0.1:{handed[1]}"
        with urllib.request.urlopen(f"{url}/api/status", timeout=10) as reply:
            assert reply.status == 200
