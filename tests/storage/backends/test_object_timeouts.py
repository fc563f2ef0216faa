"""A hung S3 server (SIGSTOP of a real SeaweedFS of this test's own): an error naming the endpoint in seconds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog import collect_garbage
from stable_explore.catalog.remote import RemoteCatalog
from stable_explore.storage.backends.object import shared_store
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


@pytest.fixture(scope="module")
def hung_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A server of this module alone (the session's is shared: it must never be stopped); each test that stops
    it lets it go on (SIGCONT) before it ends. One start (~4 s) for the module, not one per test."""
    with seaweedfs(tmp_path_factory.mktemp("hung-seaweedfs"), volumes=2) as server:
        server.create_bucket("hung")
        yield server


@pytest.fixture
def own_server(hung_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The module's server, with its credentials and endpoint in this test's environment."""
    for name, value in hung_server.env.items():
        monkeypatch.setenv(name, value)
    return hung_server


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


def _rows(n: int, seed: int) -> list[dict[str, object]]:
    return [{"x": i, "blob": bytes([(i + seed) % 251]) * 400} for i in range(n)]


_BLOBS = se.Features(x=se.Value("int64"), blob=se.Value("binary"))


def test_reads_and_uploads_to_a_stopped_server_fail_as_remote_errors_within_the_bound(
    own_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34 #2: a read of a stopped server was called corruption after 2 timeouts; an upload took 11."""
    timeout = 3.0
    monkeypatch.setenv("STABLE_EXPLORE_S3_TIMEOUT", f"{timeout:g}")
    monkeypatch.setenv("STABLE_EXPLORE_LEASE_SECONDS", "6")  # a lease the failed upload leaves runs out soon
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = "s3://hung/bounded"
    for attempt in range(3):  # the setup, not what is tested: a loaded machine may make one request miss 3 s
        try:
            built = se.build(
                _rows(3000, 0), _BLOBS, name="t", home=url, progress=False, batch_size=100, shard_size="40KB"
            )
            break
        except se.RemoteStoreError:
            if attempt == 2:
                raise
    assert built.num_shards >= 20
    opened = se.load(f"{url}/t")
    assert opened[0]["x"] == 0

    os.killpg(own_server.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(se.RemoteStoreError) as read:
            opened[2999]  # a shard never opened: its footer must come from the server
        read_s = time.monotonic() - started
    finally:
        os.killpg(own_server.pid, signal.SIGCONT)
    # one request that is not answered: the timeout, not a second request to ask whether the shard is damaged
    assert read_s < 1.5 * timeout + 0.5, read_s
    assert own_server.endpoint in str(read.value)
    assert "damaged" not in str(read.value)
    assert "truncated" not in str(read.value)

    store = shared_store(url)
    stopped_at: list[float] = []
    stopping = threading.Lock()
    before, real_count = store.requests, store._count

    def stop_at_the_twelfth() -> None:
        # the server is stopped by the upload's 12th request itself, just before it goes out (the upload's files
        # are going out): a thread polling the count could be left without the GIL until the build had ended
        real_count()
        with stopping:
            if not stopped_at and store.requests >= before + 12:
                os.killpg(own_server.pid, signal.SIGSTOP)
                stopped_at.append(time.monotonic())

    try:
        with monkeypatch.context() as patched:  # not monkeypatch.undo(): the test's environment stays
            patched.setattr(store, "_count", stop_at_the_twelfth)
            with pytest.raises(se.RemoteStoreError) as wrote:
                se.build(_rows(3000, 1), _BLOBS, name="u", home=url, progress=False, batch_size=100, shard_size="40KB")
            failed_at = time.monotonic()
    finally:
        os.killpg(own_server.pid, signal.SIGCONT)
    # the requests in flight end within the timeout; none is started after a failure (no cleanup, no lease
    # release against a server that does not answer): it was 110 s with a 10 s timeout
    assert failed_at - stopped_at[0] < 2 * timeout + 2, failed_at - stopped_at[0]
    assert own_server.endpoint in str(wrote.value)

    # the server back: what the failed upload left is an interrupted publish. Its publish lease was let go by this
    # process without a delete (the server had failed), so this process's gc sweeps it at once (another process
    # waits for it to run out: test_lease.py::test_a_stopped_holders_lease_is_taken_over_after_it_runs_out)
    report = collect_garbage(RemoteCatalog(url), grace=0)
    assert any("interrupted publish" in line for line in report.swept), report.summary()
    checked = se.fsck(home=url)
    assert not checked.problems, str(checked)
    assert se.gc(home=url).removed == [], "and gc of the whole home goes on (the swept prefix is no dataset)"
    assert se.load(f"{url}/t")[2999]["x"] == 2999


def test_a_home_whose_port_nothing_listens_on_fails_fast_naming_the_endpoint(tmp_path: Path) -> None:
    # the port stays bound, never listened on, until the load is done: a connection to it is refused, and no other
    # process (a test server picking a free port) can take it meanwhile, as it could once a probe was closed
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        options = {
            "endpoint": f"http://127.0.0.1:{port}",
            "allow_http": True,
            "aws_access_key_id": "key",
            "aws_secret_access_key": "secret",
        }
        started = time.monotonic()
        with pytest.raises(se.RemoteStoreError) as caught:
            se.load("t", home="s3://nowhere/home", storage_options=options)
        assert time.monotonic() - started < 10
    said = str(caught.value)
    assert f"http://127.0.0.1:{port}" in said
    assert "nothing accepts connections" in said, said
    assert "secret" not in said
