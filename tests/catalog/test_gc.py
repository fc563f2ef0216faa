"""gc: untagged versions beyond the newest go, tagged ones never, and leftovers of dead saves."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog import Catalog, collect_garbage
from tests.sources import NUM_FEATURES, numbers


def test_gc_frees_untagged_versions_and_never_tagged_ones(home: Path) -> None:
    kept = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False, tag="keep")
    doomed = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    latest = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    freed = se.gc(home=home, keep=0)
    assert freed >= doomed.nbytes
    remaining = {row["version"] for row in se.versions("numbers", home=home)}
    assert remaining == {kept.version, latest.version}
    assert se.gc(home=home, keep=0) == 0
    # the source index no longer points at the deleted version: building it again works
    again = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    assert again.build_info.startswith("rebuilt")
    assert len(again) == 200


def test_gc_counts_only_bytes_it_frees_from_an_interrupted_save(home: Path) -> None:
    import socket

    ds = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False)
    versions = home / "numbers" / "versions"
    stale = versions / f".staging.tmp-{socket.gethostname()}-999999-dead"
    stale.mkdir()
    (stale / "new.arrow").write_bytes(b"x" * 1000)
    os.link(ds.cache_dir / "shard-00000.arrow", stale / "linked.arrow")  # still the parent's
    freed = se.gc(home=home)
    assert freed == 1000
    assert not stale.exists()
    assert se.verify(ds).num_rows == 300


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_gc_sweeps_leftovers_of_dead_processes_and_says_so(home: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    host, dead = socket.gethostname(), _dead_pid()
    root = home / "numbers"
    ref_tmp = root / "refs" / f".latest.tmp-{host}-{dead}-abcd1234"
    ref_tmp.write_text("x\n")
    source_tmp = root / "sources" / f".abc.tmp-{host}-{dead}-abcd1234"
    source_tmp.write_text("x\n")
    stale_lock = root / ".build-0123abcd.lock"
    stale_lock.write_text(json.dumps({"pid": dead, "host": host, "since": "then"}) + "\n")
    reused = root / "versions" / f".staging.tmp-{host}-{os.getpid()}-abcd1234"  # this pid, but older than us
    reused.mkdir()
    (reused / "shard-00000.arrow").write_bytes(b"x" * 100)
    _age(reused, 3 * 3600)
    live = root / "versions" / f".staging.tmp-{host}-{os.getpid()}-live0001"  # a build of this process, now
    live.mkdir()
    report = se.gc(home=home)
    swept = "\n".join(report.swept)
    for path in (ref_tmp, source_tmp, stale_lock, reused):
        assert not path.exists(), path
        assert str(path) in swept
    assert live.exists()
    assert str(live) not in swept
    assert int(report) == 100 + 2 + 2  # the shard, and the two one-line temp files
    assert se.verify(ds).num_rows == 3
    assert se.fsck(home=home).ok


def test_gc_never_sweeps_a_held_lock(home: Path) -> None:
    from stable_explore.storage.backends.locks import hold_lock

    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    lock = home / "numbers" / ".build-feedbeef.lock"
    with hold_lock(lock):
        assert se.gc(home=home).swept == []
        assert lock.exists()
    assert not lock.exists()  # let go: its holder removes it


def test_gc_removes_the_empty_dataset_a_failed_first_build_left(home: Path) -> None:
    def broken() -> Iterator[dict[str, object]]:
        yield {"x": 1, "s": "a"}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        se.build(broken, NUM_FEATURES, name="never", home=home, progress=False)
    folder = home / "never"
    assert not folder.exists()  # a first build that fails tidies its folder away
    (folder / "versions").mkdir(parents=True)  # what one killed before it could tidy leaves
    assert se.gc(home=home).swept == []  # it may be a first build starting now: left a minute
    _age(folder / "versions", 120)
    report = se.gc(home=home)
    assert not folder.exists()
    assert report.swept == [f"{folder} (an empty dataset left by a failed first build)"]


def test_gc_drops_file_listings_no_version_names(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a")

    def files(root: str) -> Iterator[dict[str, object]]:
        for i, p in enumerate(sorted(Path(root).iterdir())):
            yield {"x": i, "s": p.name}

    se.build(files, NUM_FEATURES, args=(str(data),), home=home, progress=False)
    (data / "b.txt").write_text("b")
    se.build(files, NUM_FEATURES, args=(str(data),), home=home, progress=False)
    listings = home / "files" / "sources" / "files"
    assert len(list(listings.iterdir())) == 2
    for path in listings.iterdir():
        _age(path, 3600)
    report = collect_garbage(Catalog(home), keep=0, grace=0)
    assert len(report.removed) == 1
    assert len(list(listings.iterdir())) == 1  # the deleted version's listing went with it
    assert any("a file listing no version's source names" in s for s in report.swept)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_copy_given_up_on_is_kept_a_day_for_its_retry_then_collected(home: Path) -> None:
    se.build(numbers, NUM_FEATURES, args=(5,), name="n", home=home, progress=False)
    versions = home / "n" / "versions"
    recent, abandoned = versions / "0123456789abcdef", versions / "fedcba9876543210"
    for folder in (recent, abandoned):  # whole shards a killed pull placed, no metadata
        folder.mkdir()
        (folder / "shard-00000.arrow").write_bytes(b"x" * 100)
    two_days_ago = time.time() - 2 * 24 * 3600
    for path in (abandoned / "shard-00000.arrow", abandoned):
        os.utime(path, (two_days_ago, two_days_ago))
    message = "a version directory without _metadata.json: an interrupted pull, push or delete (a retry of the"
    assert sum(message in str(p) for p in se.fsck(home=home).problems) == 2
    report = se.gc(home=home)
    assert report == 100
    assert f"{abandoned} (a copy without _metadata.json nothing wrote to for a day)" in report.swept
    assert not abandoned.exists()
    assert (recent / "shard-00000.arrow").is_file()  # a pull may still resume it


def test_gc_removes_the_kept_signals_of_the_versions_it_deletes(home: Path) -> None:
    import numpy as np

    from stable_explore import signals

    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]))
    rows = [{"image": np.full((8, 8), 20 * i, dtype=np.uint8), "label": i % 2} for i in range(6)]
    first = se.build(rows, features, name="pics", home=home, progress=False)
    signals.perceptual_hashes(first, progress=False)
    second = first.drop([0]).save(message="drop 0")  # latest moves: the first version has no ref
    signals.perceptual_hashes(second, progress=False)
    kept = home / "pics" / "signals"
    assert sorted(p.name for p in kept.iterdir()) == sorted([first.version, second.version])
    freed = se.gc(home=home, keep=0)
    assert freed > 0
    assert [p.name for p in kept.iterdir()] == [second.version]  # the deleted version's signals went with it
    before = signals.cache.COUNTS["read"]
    signals.perceptual_hashes(se.load("pics", home=home), progress=False)
    assert signals.cache.COUNTS["read"] == before + 1  # the live version's are still read
