"""A hung S3 server (SIGSTOP of a real SeaweedFS of this test's own): an error naming the endpoint in seconds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.storage.backends.read_cache import CACHE_ENV
from tests.s3server import S3Server, seaweedfs

pytest.importorskip("obstore")
ROOT = Path(__file__).resolve().parents[2]

_LOAD = textwrap.dedent(
    """
    import json, sys, time, stable_explore as se
    options = json.loads(sys.argv[2]) or None
    started = time.monotonic()
    try:
        se.load(sys.argv[1] + "/d", storage_options=options)
        print(json.dumps({"error": None}))
    except Exception as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc), "s": time.monotonic() - started}))
    """
)


@pytest.fixture
def own_server(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A server of this test alone (the session's is shared: it must never be stopped)."""
    with seaweedfs(tmp_path_factory.mktemp("hung-seaweedfs"), volumes=2) as server:
        server.create_bucket("hung")
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        yield server


def _load_while_hung(server: S3Server, url: str, tmp_path: Path, env: dict[str, str], options: object) -> dict:
    environment = {**os.environ, **env, CACHE_ENV: str(tmp_path / "other-machine"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, url, json.dumps(options)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_hung_server_is_an_error_naming_the_endpoint_within_seconds(own_server: S3Server, tmp_path: Path) -> None:
    url = "s3://hung/home"
    features = se.Features(x=se.Value("int64"))
    se.build([{"x": i} for i in range(10)], features, name="d", home=url, progress=False)
    os.killpg(own_server.pid, signal.SIGSTOP)
    try:
        by_env = _load_while_hung(own_server, url, tmp_path, {"STABLE_EXPLORE_S3_TIMEOUT": "1"}, None)
        by_option = _load_while_hung(own_server, url, tmp_path, {}, {"read_timeout": "1s"})
    finally:
        os.killpg(own_server.pid, signal.SIGCONT)
    for said in (by_env, by_option):
        assert said["error"] == "RemoteStoreError", said
        assert said["s"] < 8, said
        assert own_server.endpoint in said["message"], "the error names the server that did not answer"
        assert "STABLE_EXPLORE_S3_TIMEOUT" in said["message"]
        assert "delete" not in said["message"], "a transport error is never called damage"
    assert _load_while_hung(own_server, url, tmp_path, {}, None) == {"error": None}, "the server back: all works"
