"""Where a bucket home meets the other features: gc then fsck, saves under another name, URL refs, reprs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.storage.backends.object import ObjectStore

pytest.importorskip("obstore")
F = se.Features(x=se.Value("int64"), label=se.ClassLabel(names=["cat", "dog"]))


def numbers(n: int, offset: int = 0):
    for i in range(n):
        yield {"x": i + offset, "label": i % 2}


def _build(home: str, n: int = 300, offset: int = 0, name: str = "digits") -> se.CachedDataset:
    return se.build(numbers, F, args=(n, offset), name=name, home=home, progress=False, shard_size="2KB", batch_size=50)


def test_fsck_after_gc_on_a_bucket_reports_nothing(bucket: str) -> None:
    first = _build(bucket)
    assert first.deleted_reason() is None
    _build(bucket, offset=1)
    kept = _build(bucket, offset=2)
    freed = se.gc("digits", keep=0, home=bucket)
    assert len(freed.removed) == 2
    report = se.fsck(home=bucket)
    assert report.ok, str(report)
    assert report.versions == 1
    assert se.load("digits", home=bucket).version == kept.version
    assert kept.deleted_reason() is None
    assert f"version {first.version} ({bucket}/digits/versions/{first.version}) was garbage-collected by gc" in (
        first.deleted_reason(fresh=True) or ""  # (looked up at most every few seconds, unless asked afresh)
    )
    store = ObjectStore(bucket)
    assert all(not store.list_dir(f"digits/versions/{gone.split('@')[1]}") for gone in freed.removed)


def test_a_save_under_another_name_in_a_bucket_reuses_the_parents_shards(bucket: str, tmp_path: Path) -> None:
    ds = _build(bucket)
    local = _build(str(tmp_path / "local"))
    saved = ds.relabel({3: "cat"}).save(name="other", message="fixed 3", progress=False)
    local_saved = local.relabel({3: "cat"}).save(name="other", message="fixed 3", progress=False)
    assert saved.version == local_saved.version
    assert saved.name == "other"
    again = se.load(f"{bucket}/other")
    assert again.version == saved.version
    assert again[3]["label"] == 0
    assert [row["x"] for row in again] == list(range(300))
    assert se.verify(again).num_rows == 300
    report = se.fsck(home=bucket)
    assert report.ok, str(report)
    dropped = ds.drop([0, 1]).save(name="third", progress=False)
    assert se.load(f"{bucket}/third")[0]["x"] == 2
    assert se.fsck(home=bucket).ok
    assert dropped.version == local.drop([0, 1]).save(name="third", progress=False).version


def test_a_publish_that_fails_midway_takes_back_what_it_uploaded(tmp_path: Path, bucket: str) -> None:
    from stable_explore.catalog.publish import publish_version
    from stable_explore.catalog.remote import open_catalog
    from stable_explore.errors import CacheWriteError
    from stable_explore.storage.format.metadata import VersionMetadata
    from stable_explore.storage.write.writer import write_shards

    staging = tmp_path / "staging"
    staging.mkdir()
    fields = write_shards(numbers(300), F, staging, shard_size_bytes=2048, batch_size=50)
    assert len(fields["shard_filenames"]) > 2
    (staging / fields["shard_filenames"][1]).unlink()  # one shard vanishes before its upload
    catalog = open_catalog(bucket)
    with pytest.raises(CacheWriteError, match=r"shard-00001\.arrow: neither staged"):
        publish_version(catalog, "digits", staging, fields, VersionMetadata(message="cut"))
    store = ObjectStore(bucket)
    assert all(not store.list_dir(f"digits/versions/{v}") for v in store.list_dir("digits/versions"))
    report = se.fsck(home=bucket)
    assert not any("interrupted publish" in str(p) for p in report.problems), str(report)


def test_every_call_that_takes_a_name_takes_a_url_ref(bucket: str, tmp_path: Path) -> None:
    first = _build(bucket)
    latest = _build(bucket, offset=1)
    url = f"{bucket}/digits"
    elsewhere = tmp_path / "elsewhere"  # a home= that the URL overrides, as load does
    assert se.tag(f"{url}@{first.version[:8]}", "clean", home=elsewhere) == first.version
    assert se.load(f"{url}@clean").version == first.version
    listed = se.versions(f"{url}@clean", home=elsewhere)
    assert sorted(row["version"] for row in listed) == sorted([first.version, latest.version])
    assert se.verify(f"{url}@clean").num_rows == 300
    assert se.compare(f"{url}@clean", url).summary() == se.compare(first, latest).summary()
    assert se.fsck(url).ok
    se.tag(url, "newest", home=elsewhere)
    assert se.gc(url, keep=0, home=elsewhere).removed == []  # both tagged: nothing to collect
    assert not elsewhere.exists()


def test_a_repr_reads_the_bucket_at_most_once_in_a_while(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.catalog import latest_seen

    first = _build(bucket)
    opened = se.load(f"{bucket}/digits")
    reads: list[str] = []
    original = ObjectStore.read_text

    def counted(self: ObjectStore, key: str) -> str | None:
        reads.append(key)
        return original(self, key)

    monkeypatch.setattr(ObjectStore, "read_text", counted)
    for _ in range(50):
        assert repr(opened).endswith(", latest)")
        opened._repr_html_()
    assert len(reads) <= 1, reads
    second = _build(bucket, offset=1)  # this process moved latest: every repr says so at once
    assert repr(opened).endswith(f", latest is digits@{second.version})")
    assert repr(first).endswith(f", latest is digits@{second.version})")
    reads.clear()
    monkeypatch.setattr(latest_seen, "FRESH_SECONDS", 0.0)  # past the window, one read again
    assert repr(opened).endswith(f", latest is digits@{second.version})")
    assert reads == ["digits/refs/latest"]


KILLED_COPY = r"""
import os, signal, sys
what, url, home = sys.argv[1], sys.argv[2], sys.argv[3]
finished = []

def kill_on_second(owner, attr, inside):
    real = getattr(owner, attr)

    def wrapped(*args, **kwargs):
        if inside in str(args[0] if attr == "replace" else args[1]):
            if finished:  # a file starts after one is whole (copies run in threads: wait for a whole one)
                os.kill(os.getpid(), signal.SIGKILL)
            result = real(*args, **kwargs)
            finished.append(args)
            return result
        return real(*args, **kwargs)

    setattr(owner, attr, wrapped)

import stable_explore as se
if what == "pull":
    kill_on_second(os, "replace", "/versions/")
    se.pull(url, home=home, progress=False)
else:
    import obstore
    kill_on_second(obstore, "put", "/versions/")
    se.push(url, home, progress=False)
"""


def _killed(what: str, source: str, target: str, tmp: Path) -> None:
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TMPDIR": str(tmp)}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_COPY, what, source, target], env=env, cwd=root, capture_output=True, check=False
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


def test_a_killed_pull_or_push_is_reported_swept_and_resumed(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    team = _build(bucket, n=2000)
    mine = tmp_path / "mine"
    _killed("pull", f"{bucket}/digits@{team.version}", str(mine), scratch)
    version_dir = mine / "digits" / "versions" / team.version
    partial = sorted(p for p in version_dir.iterdir() if ".tmp-" in p.name)
    whole = sorted(p for p in version_dir.iterdir() if not p.name.startswith("."))
    assert partial  # (copies run a few at a time: each left its temp file)
    assert all(p.name.startswith(".shard-0") for p in partial)
    problems = [str(p) for p in se.fsck(home=mine).problems]
    for leftover in partial:
        assert any(line.startswith(f"{leftover}: left behind by process") for line in problems), problems
    swept = se.gc(home=mine)
    for leftover in partial:
        assert any(line.startswith(str(leftover)) for line in swept.swept)
        assert not leftover.exists()
    assert all(p.exists() for p in whole)  # whole files stay: the retry resumes

    _killed("pull", f"{bucket}/digits@{team.version}", str(mine), scratch)
    pulled = se.pull(f"{bucket}/digits@{team.version}", home=mine, progress=False)  # the retry sweeps and resumes
    assert pulled.version == team.version
    assert not [p for p in version_dir.iterdir() if p.name.startswith(".")]
    assert se.fsck(home=mine).ok

    local = _build(str(tmp_path / "local"), n=2000, offset=5)
    other = f"{bucket}/elsewhere"
    _killed("push", str(local.cache_dir), other, scratch)
    left = list(scratch.iterdir())
    assert [p.name.startswith(".stable-explore-transfer.tmp-") for p in left] == [True]
    # the retry sweeps the dead copy's temp folder, takes over its publish lease (its holder is gone) and resumes
    with pytest.warns(se.LockWaitWarning, match=r"took over the lease .*/\.publish-.* which is gone"):
        pushed = se.push(local, other, progress=False)
    assert pushed.files_kept >= 1
    assert list(scratch.iterdir()) == []
    assert se.load(f"{other}/digits").version == local.version
    assert se.fsck(home=other).ok


def test_a_save_from_a_version_gc_took_is_refused_though_the_read_cache_holds_it(bucket: str) -> None:
    """Found by the state machine's soak: the local read cache could still serve every row, so it published."""
    first = _build(bucket, n=40)
    _build(bucket, n=40, offset=7)  # latest moves on: the first version is gc's to take
    draft = se.load(f"digits@{first.version}", home=bucket).relabel({1: 0})
    assert len(draft.origin.to_arrow()) == 40  # every block of it is in this machine's read cache now
    se.gc("digits", keep=0, home=bucket)
    for name in ("digits", "other"):
        with pytest.raises(
            se.CacheNotFoundError, match=f"nothing was saved: version {first.version} .*garbage-collected"
        ):
            draft.save(name=name, progress=False)
    assert len(se.versions("digits", home=bucket)) == 1  # nothing was published: only the latest is left
