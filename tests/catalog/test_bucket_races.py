"""Two machines on one bucket (a real SeaweedFS): gc while the other saves, reads meanwhile, a stopped lock holder."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import stable_explore as se
from stable_explore.catalog import collect_garbage
from stable_explore.catalog.remote import RemoteCatalog
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.backends.read_cache import CACHE_ENV

if TYPE_CHECKING:
    from tests.s3server import S3Server

pytest.importorskip("obstore")
_prefixes = itertools.count()
ROOT = Path(__file__).resolve().parents[2]

_SAVER = """
import sys, stable_explore as se
url = sys.argv[1]
for i in range(6):
    ds = se.load(url + "/d")
    saved = ds.relabel({i % 50: "b" if ds[i % 50]["label"] == 0 else "a"}).save(message=f"{i}", progress=False)
    print(saved.version, flush=True)
"""

_GC = """
import os, sys, stable_explore as se
url, stop = sys.argv[1], sys.argv[2]
runs = 0
while not os.path.exists(stop) or runs < 3:
    se.gc("d", keep=0, home=url)
    runs += 1
print(runs, flush=True)
"""

_READER = """
import json, os, sys, stable_explore as se
url, stop = sys.argv[1], sys.argv[2]
ok, failed = 0, []
while not os.path.exists(stop) or ok < 3:
    try:
        ds = se.load(url + "/d")
    except Exception as exc:
        failed.append(f"load: {type(exc).__name__}: {exc}")
        continue
    try:
        assert len(ds) == 50 and ds[7]["label"] in (0, 1)
        ok += 1
    except se.CacheNotFoundError as exc:  # the version was deleted by gc after it was opened: said so
        if "gc" not in str(exc):
            failed.append(f"read: {type(exc).__name__}: {exc}")
    except Exception as exc:
        failed.append(f"read: {type(exc).__name__}: {exc}")
print(json.dumps({"ok": ok, "failed": failed}), flush=True)
"""


def _machine(script: str, url: str, stop: Path, cache: Path) -> subprocess.Popen[str]:
    env = {**os.environ, CACHE_ENV: str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, url, str(stop)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_gc_on_one_machine_never_deletes_what_another_saves_and_reads_never_fail(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "here"))
    url = f"s3://team/races-{os.getpid()}-{next(_prefixes)}"
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))
    se.build([{"label": i % 2, "x": i} for i in range(50)], features, name="d", home=url, progress=False)
    stop = tmp_path / "stop"  # the saver makes 6 versions; gc and the reader go on until it is done
    saver = _machine(_SAVER, url, stop, tmp_path / "saver")
    collector = _machine(_GC, url, stop, tmp_path / "gc")
    reader = _machine(_READER, url, stop, tmp_path / "reader")
    outputs = {}
    for role, proc in (("saver", saver), ("gc", collector), ("reader", reader)):
        out, err = proc.communicate(timeout=300)
        stop.touch()
        assert proc.returncode == 0, f"{role}: {err[-3000:]}"
        outputs[role] = out
    saved = outputs["saver"].split()
    assert len(saved) == 6, "every save went through"
    assert int(outputs["gc"]) >= 3, "gc ran again and again"
    read = json.loads(outputs["reader"])
    assert read["failed"] == [], read["failed"][:5]
    assert read["ok"] >= 3

    latest = se.load(f"{url}/d")
    assert latest.version == saved[-1], "the last acknowledged save is latest"
    assert se.verify(latest).num_rows == 50, "and it is whole: gc took none of its files"
    for row in se.versions("d", home=url):
        assert se.verify(f"d@{row['version']}", home=url).num_rows == 50


def test_a_stopped_process_holding_a_datasets_refs_lock_makes_others_give_up_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    se.build([{"x": i} for i in range(5)], se.Features(x=se.Value("int64")), name="d", home=home, progress=False)
    holder = textwrap.dedent(
        """
        import sys, time
        from stable_explore.catalog import Catalog
        with Catalog(sys.argv[1]).refs_lock("d"):
            print("held", flush=True)
            time.sleep(600)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", holder, str(home)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        os.kill(proc.pid, signal.SIGSTOP)  # alive, so its lock is not released, and it does nothing
        waiter = textwrap.dedent(
            """
            import sys, warnings, stable_explore as se
            ds = se.load("d", home=sys.argv[1])
            try:
                ds.drop([1]).save(progress=False)
            except se.LockTimeoutError as exc:
                print(exc)
            with warnings.catch_warnings(record=True) as caught:  # gc goes on with the other datasets
                warnings.simplefilter("always")
                se.gc(keep=0, home=sys.argv[1])
            print(*[w.message for w in caught])
            """
        )
        started = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", waiter, str(home)],
            env={**env, "STABLE_EXPLORE_LOCK_TIMEOUT": "1"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert time.monotonic() - started < 30
        assert out.returncode == 0, out.stderr
        said_save, said_gc = out.stdout.splitlines()
        assert f"held by process {proc.pid} on" in said_save
        assert "STABLE_EXPLORE_LOCK_TIMEOUT" in said_save, "the advice names the setting that helps"
        assert f"held by process {proc.pid} on" in said_gc
        assert "dataset 'd' skipped" in said_gc
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # its holder killed, the lock is free at once (the kernel let it go): a save goes through
    ds = se.load("d", home=home)
    with pytest.warns(se.LockWaitWarning, match=f"took over the lock .* from process {proc.pid} on .* which is gone"):
        assert ds.drop([0]).save(progress=False).version != ds.version


def test_a_dataset_whose_version_gc_deleted_says_so_on_read(
    s3_env: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"s3://team/races-{os.getpid()}-{next(_prefixes)}"
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))
    old = se.build([{"label": i % 2, "x": i} for i in range(50)], features, name="d", home=url, progress=False)
    opened = se.load(f"{url}/d")  # metadata only: no shard byte read yet
    old.drop([0]).save(progress=False)  # latest moves on
    assert f"d@{old.version}" in se.gc("d", keep=0, home=url).removed
    with pytest.raises(se.CacheNotFoundError, match=f"version {old.version} .* was garbage-collected by gc"):
        opened[3]
    assert se.load(f"{url}/d")[3]["x"] == 4, "loaded again: the new latest"


# -- issue 34 #4: a save while another machine's gc runs, and an interrupted save -----------------------------

_LABELLED = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"), blob=se.Value("binary"))


def _labelled(n: int, seed: int = 0) -> list[dict[str, object]]:
    return [{"label": i % 2, "x": i, "blob": bytes([(i + seed) % 251]) * 300} for i in range(n)]


def _publish_leases(store: ObjectStore, name: str) -> list[str]:
    return [key for key, _, _ in store.list_objects(name) if "/.publish-" in key]


def _wait_for(what: Callable[[], object], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_gc_between_a_saves_reads_and_its_copy_names_gc_and_leaves_nothing_behind(bucket: str) -> None:
    """Seen: the save said "neither staged nor held by a version this save reuses" and left 8 files gc never swept."""
    parent = se.build(
        _labelled(900), _LABELLED, name="d", home=bucket, progress=False, shard_size="40KB", batch_size=50
    )
    assert parent.num_shards >= 4
    se.build(_labelled(900, 1), _LABELLED, name="d", home=bucket, progress=False)  # latest moves on
    edit = se.load(f"d@{parent.version}", home=bucket).relabel({0: "b"})  # its other shards are reused (copied)
    catalog = RemoteCatalog(bucket)
    store = ObjectStore(bucket)
    outcome: dict[str, BaseException] = {}

    def save() -> None:
        try:
            edit.save(message="while gc runs", progress=False)
        except BaseException as exc:  # the outcome is judged below
            outcome["error"] = exc

    with catalog.refs_lock("d"):  # the other machine's gc holds the refs lease: the save reads, uploads, then waits
        saver = threading.Thread(target=save)
        saver.start()
        _wait_for(lambda: _publish_leases(store, "d") or not saver.is_alive())
        report = collect_garbage(catalog, "d", keep=0, grace=0)  # the parent goes; the running publish is left alone
        assert f"d@{parent.version}" in report.removed
        assert not [s for s in report.swept if "interrupted" in s], "a publish holding its lease is never swept"
    saver.join(300)
    error = outcome.get("error")
    assert isinstance(error, se.CacheNotFoundError), repr(error)
    assert f"d@{parent.version}'s shard was removed by gc (se.gc) while this save read it" in str(error)
    assert "neither staged" not in str(error)

    # what the failed save had uploaded it took back (else gc would sweep it): nothing is left behind
    assert [
        k
        for k, _, _ in store.list_objects("d/versions")
        if "/_metadata.json" not in k and k.split("/")[2] not in {v["version"] for v in se.versions("d", home=bucket)}
    ] == []
    checked = se.fsck(home=bucket)
    assert not checked.problems, str(checked)


_INTERRUPTED_SAVE = """
import sys, threading, time, obstore, stable_explore as se
# after three files of the version are up, the others wait (until this process is killed): the save cannot end
# before the test, however slow its look at the bucket on a loaded machine, sees the three and kills it
real_put, uploaded, lock = obstore.put, [], threading.Lock()

def put(store, path, *args, **kwargs):
    if "/versions/" in str(path):
        with lock:
            enough = len(uploaded) >= 3
        if enough:
            time.sleep(600)
    result = real_put(store, path, *args, **kwargs)
    if "/versions/" in str(path):
        with lock:
            uploaded.append(path)
    return result

obstore.put = put
ds = se.load(sys.argv[1] + "/d")
rows = range(0, len(ds), 40)  # a row in every shard: every shard is written again, and uploaded
ds.relabel({i: "b" if ds[i]["label"] == 0 else "a" for i in rows}).save(message="killed", progress=False)
"""


def test_a_save_killed_mid_copy_is_swept_by_gc_once_its_holder_is_gone(bucket: str, tmp_path: Path) -> None:
    """Seen: 8 of 12 interrupted saves left files without _metadata.json that gc never swept; fsck kept failing."""
    built = se.build(
        _labelled(2400), _LABELLED, name="d", home=bucket, progress=False, shard_size="40KB", batch_size=50
    )
    assert built.num_shards >= 12
    store = ObjectStore(bucket)
    versions = f"d/versions/{built.version}/"
    env = {**os.environ, CACHE_ENV: str(tmp_path / "saver"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _INTERRUPTED_SAVE, bucket], env=env, stderr=subprocess.PIPE)
    try:

        def copying() -> bool:
            assert proc.poll() is None, "the save ended before it was killed"
            return len([k for k, _, _ in store.list_objects("d/versions") if not k.startswith(versions)]) >= 3

        _wait_for(copying)
        proc.kill()
    finally:
        proc.kill()
        proc.wait()
    assert _publish_leases(store, "d"), "the killed save's publish lease is still there"
    checked = se.fsck(home=bucket)
    assert any("interrupted publish" in str(p) for p in checked.problems), str(checked)
    catalog = RemoteCatalog(bucket)
    with warnings.catch_warnings():  # killed inside its refs lease or not: gc may take that lease over (and say so)
        warnings.simplefilter("ignore", se.LockWaitWarning)
        assert se.gc("d", home=bucket).swept == [], "written within the last minute: left alone"
        # its holder is gone (a process of this machine that no longer runs): the lease holds nothing any more
        report = collect_garbage(catalog, "d", grace=0)
    assert [s for s in report.swept if "interrupted publish" in s], report.summary()
    checked = se.fsck(home=bucket)
    assert not checked.problems, str(checked)
    assert _publish_leases(store, "d") == []
    assert se.load(f"{bucket}/d").version == built.version
