"""Leases on a real S3 server (SeaweedFS): conditional puts, exclusion across machines, heartbeat, takeover."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from stable_explore.errors import LeaseLostError, LockTimeoutError
from stable_explore.storage.backends.lease import LeaseRecord, hold_lease
from stable_explore.storage.backends.read_cache import CACHE_ENV

if TYPE_CHECKING:
    from stable_explore.storage.backends.object import ObjectStore
    from tests.s3server import S3Server

pytest.importorskip("obstore")
_counter = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(s3_env: S3Server) -> ObjectStore:
    from stable_explore.storage.backends.object import ObjectStore

    return ObjectStore(f"s3://team/lease-{os.getpid()}-{next(_counter)}")


def test_the_server_honours_if_none_match_and_if_match(store: ObjectStore) -> None:
    first = store.put_tagged("k", "one", None)
    assert first is not None
    assert store.put_tagged("k", "two", None) is None, "a put if absent over an object is refused"
    assert store.put_tagged("k", "two", '"not-its-etag"') is None, "a put on a wrong ETag is refused"
    second = store.put_tagged("k", "two", first)
    assert second is not None
    assert second != first
    assert store.put_tagged("k", "three", first) is None, "the ETag of a replaced object no longer matches"
    assert store.read_tagged("k") == ("two", second)


def test_a_lease_records_its_holder_and_is_renewed_while_held(store: ObjectStore) -> None:
    # 1 s, renewed every third of it: the waiter below takes the lease over only if no renewal lands for a whole
    # second (with 0.6 s, a heartbeat whose put took 0.4 s on a loaded machine, server included, was enough)
    with hold_lease(store, "d/.refs.lock", seconds=1.0):
        found = store.read_tagged("d/.refs.lock")
        assert found is not None
        first = LeaseRecord.parse(found[0])
        assert first is not None
        assert (first.pid, first.host) == (os.getpid(), os.uname().nodename)
        time.sleep(2.0)  # two lease periods: only the heartbeat keeps it alive
        found = store.read_tagged("d/.refs.lock")
        assert found is not None
        renewed = LeaseRecord.parse(found[0])
        assert renewed is not None
        assert renewed.holder == first.holder
        assert renewed.expires > first.expires
        with (
            pytest.raises(LockTimeoutError, match=r"held by process \d+ on .*lease until"),
            hold_lease(store, "d/.refs.lock", seconds=1.0, timeout=2.5),
        ):
            pass  # a renewed lease is never taken over, however long one waits
    assert store.read_text("d/.refs.lock") is None, "let go: the lease object is deleted"


def test_a_stale_lease_is_taken_over_with_a_warning_and_its_old_holder_learns_it_lost(store: ObjectStore) -> None:
    said: list[str] = []
    with hold_lease(store, "d/.refs.lock", seconds=0.5) as old:
        old._stop.set()  # the heartbeat stops, as in a process stopped by SIGSTOP
        old._beat.join()
        started = time.monotonic()
        with hold_lease(store, "d/.refs.lock", seconds=0.5, timeout=10, notify=said.append):
            assert time.monotonic() - started < 5
            assert any(m.startswith("took over the lease") and f"process {os.getpid()}" in m for m in said), said
            old._stop.clear()  # the old holder wakes up and renews: the lease is no longer its own
            old.renew()
            with pytest.raises(LeaseLostError, match=r"lost the lease .*taken over by process"):
                old.check()


def test_two_machines_exclude_each_other_on_a_datasets_refs(s3_env: S3Server, tmp_path: Path) -> None:
    """Two processes with separate local caches increment one counter under the refs lock: no update is lost."""
    url = f"s3://team/lease-machines-{os.getpid()}-{next(_counter)}"
    script = textwrap.dedent(
        """
        import sys, time
        from stable_explore.catalog.remote import RemoteCatalog
        catalog = RemoteCatalog(sys.argv[1])
        while time.time() < float(sys.argv[2]):
            time.sleep(0.005)
        for _ in range(15):
            with catalog.refs_lock("d"):
                n = int(catalog.store.read_text("d/counter") or "0")
                time.sleep(0.02)
                catalog.store.write_text("d/counter", str(n + 1))
        """
    )
    start = str(time.time() + 2.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, url, start],
            env={**os.environ, CACHE_ENV: str(tmp_path / machine), "PYTHONPATH": str(ROOT)},
            stderr=subprocess.PIPE,
            text=True,
        )
        for machine in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    from stable_explore.storage.backends.object import ObjectStore

    assert ObjectStore(url).read_text("d/counter") == "30"


def test_a_stopped_holders_lease_is_taken_over_after_it_runs_out(s3_env: S3Server, tmp_path: Path) -> None:
    """A process stopped while it holds a dataset's refs lease does not block the others beyond the lease."""
    url = f"s3://team/lease-stopped-{os.getpid()}-{next(_counter)}"
    holder = textwrap.dedent(
        """
        import sys, time
        from stable_explore.catalog.remote import RemoteCatalog
        with RemoteCatalog(sys.argv[1]).refs_lock("d"):
            print("held", flush=True)
            time.sleep(600)
        """
    )
    env = {**os.environ, CACHE_ENV: str(tmp_path / "a"), "PYTHONPATH": str(ROOT), "STABLE_EXPLORE_LEASE_SECONDS": "2"}
    proc = subprocess.Popen([sys.executable, "-c", holder, url], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        os.kill(proc.pid, signal.SIGSTOP)
        waiter = textwrap.dedent(
            """
            import sys, time, warnings
            from stable_explore.catalog.remote import RemoteCatalog
            started = time.monotonic()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with RemoteCatalog(sys.argv[1]).refs_lock("d"):
                    print(round(time.monotonic() - started), [str(w.message) for w in caught])
            """
        )
        env["STABLE_EXPLORE_CACHE"] = str(tmp_path / "b")
        out = subprocess.run(
            [sys.executable, "-c", waiter, url], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert out.returncode == 0, out.stderr
        waited, _, messages = out.stdout.partition(" ")
        assert int(waited) <= 10
        assert f"took over the lease {url}/d/.refs.lock from process {proc.pid}" in messages
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_lease_is_reentrant_within_a_thread_and_exclusive_across_threads(store: ObjectStore) -> None:
    errors: list[BaseException] = []

    def other() -> None:
        try:
            with store.lock("d/.refs.lock", timeout=0.3):
                pass
        except LockTimeoutError as exc:
            errors.append(exc)

    with store.lock("d/.refs.lock"), store.lock("d/.refs.lock"):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert len(errors) == 1, "another thread waits for the lease like another process"
    assert store.read_text("d/.refs.lock") is None
