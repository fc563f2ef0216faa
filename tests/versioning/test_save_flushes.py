"""Issue 39: a save flushes what it publishes side by side, and still before each rename that publishes it.

Every ``fsync`` and rename of a real save on real files is recorded (the real calls run); a slow
disk is stood in for by a pause before each real ``fsync``, so flushes that wait one after another
and flushes that wait side by side can be told apart. The flushes meant to wait together are held
until all of them are under way (not for a fixed pause): on a loaded machine a flushing thread
could start after the pause of the others had ended, and count as a wait of its own.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import CacheWriteError
from stable_explore.storage.format.cell_patches import CellPatches

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a flushed fd through /proc")

FEATURES = se.Features(label=se.ClassLabel(names=["a", "b", "c"]), x=se.Value("int64"))
_PAUSE = 0.2  # seconds a flush takes on the stand-in slow disk
_TOGETHER = 5  # a save's first flushes, meant to wait side by side: its new files, _metadata.json, staging, latest's


def _build(home: Path, n: int = 3000) -> se.CachedDataset:
    rows = ((f"k{i:05d}", {"label": i % 3, "x": i}) for i in range(n))
    return se.build(rows, FEATURES, name="p", home=home, progress=False, batch_size=250)


class _Recorder:
    """Records (what, path, start, end) of every fsync and rename, in the order they end."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, pause: float = 0.0, together: int = 0) -> None:
        """``together``: the first that many flushes each wait (at most 10 s) until all of them have started."""
        self.events: list[tuple[str, str, float, float]] = []
        self._lock = threading.Lock()
        self._started = 0
        self._all_started = threading.Event()
        real_fsync, real_rename, real_replace = os.fsync, os.rename, os.replace

        def fsync(fd: int) -> None:
            start = time.perf_counter()
            path = str(Path(f"/proc/self/fd/{fd}").readlink())
            with self._lock:
                self._started += 1
                held = self._started <= together
                if self._started == together:
                    self._all_started.set()
            if held:  # side by side, they all wait: none ends before the last has started, however late it starts
                self._all_started.wait(10)  # one after another: each waits 10 s in vain, and the test fails
            time.sleep(pause)
            real_fsync(fd)
            self._add("fsync", path, start)

        def rename(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            real_rename(source, target, *args, **kwargs)
            self._add("rename", f"{os.fspath(source)} -> {os.fspath(target)}", start)

        def replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            real_replace(source, target, *args, **kwargs)
            self._add("rename", f"{os.fspath(source)} -> {os.fspath(target)}", start)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "rename", rename)
        monkeypatch.setattr(os, "replace", replace)

    def _add(self, what: str, path: str, start: float) -> None:
        with self._lock:
            self.events.append((what, path, start, time.perf_counter()))

    def first(self, what: str, test: Any) -> int:
        return next(i for i, (w, path, _, _) in enumerate(self.events) if w == what and test(path))

    def flushed_before(self, index: int) -> set[str]:
        return {path for what, path, _, _ in self.events[:index] if what == "fsync"}

    def waits(self) -> int:
        """How many times the save waited for flushes: flushes running at once count as one wait."""
        spans = sorted((start, end) for what, _, start, end in self.events if what == "fsync")
        waits, until = 0, -1.0
        for start, end in spans:
            if start >= until:
                waits += 1
            until = max(until, end)
        return waits


def test_a_save_flushes_its_new_files_and_folder_before_the_rename_and_its_refs_after(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(home)
    draft = ds.relabel({5: "c", 700: "a", 2999: "b"})
    recorded = _Recorder(monkeypatch)
    saved = draft.save(progress=False)
    monkeypatch.undo()

    versions = str((home / "p" / "versions").resolve())
    publish = recorded.first("rename", lambda p: p.endswith(f"versions/{saved.version}"))
    staging = recorded.events[publish][1].split(" -> ")[0]
    before = recorded.flushed_before(publish)
    written = {p.name for p in saved.cache_dir.iterdir() if p.stat().st_nlink == 1}  # this save's own files
    assert {"_metadata.json", "cell-patches.json", "content-runs.json"} <= written
    assert {str(Path(staging).resolve() / name) for name in written} <= before, "every new file, before the rename"
    assert str(Path(staging).resolve()) in before, "the folder's entries, before the rename"
    latest = recorded.first("rename", lambda p: p.endswith("refs/latest"))
    assert versions in recorded.flushed_before(latest) - before, "versions/ after the rename, before latest moves"
    latest_tmp = recorded.events[latest][1].split(" -> ")[0]
    assert str(Path(latest_tmp).resolve()) in recorded.flushed_before(latest)
    assert str((home / "p" / "refs").resolve()) in recorded.flushed_before(len(recorded.events))
    assert se.verify(saved).num_rows == len(ds)
    assert se.load("p", home=home).arrow_column("label").to_pylist()[5] == 2


def test_a_save_on_a_slow_disk_waits_for_its_flushes_side_by_side(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _build(home)
    draft = ds.relabel({5: "c", 700: "a", 2999: "b"})
    recorded = _Recorder(monkeypatch, pause=_PAUSE, together=_TOGETHER)
    saved = draft.save(progress=False)
    monkeypatch.undo()
    flushes = sum(1 for what, *_ in recorded.events if what == "fsync")
    # the new runs and patches files, _metadata.json, the staging folder and latest's new file wait together;
    # then versions/ (on disk before latest is renamed) and refs/: 3 waits, where there were 7
    assert flushes == 7
    assert recorded.waits() == 3, recorded.events
    assert se.load("p", home=home).version == saved.version


def test_a_failed_flush_of_a_new_small_file_publishes_nothing_and_names_the_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(home)
    draft = ds.relabel({5: "a"})
    real = os.fsync

    def fsync(fd: int) -> None:
        if Path(f"/proc/self/fd/{fd}").readlink().name == "cell-patches.json":
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(CacheWriteError, match=r"cell-patches\.json"):
        draft.save(progress=False)
    monkeypatch.undo()
    assert se.load("p", home=home).version == ds.version, "latest did not move"
    versions = home / "p" / "versions"
    assert sorted(p.name for p in versions.iterdir()) == [ds.version], "no version and no staging folder left"


def test_row_hashes_patched_for_a_few_rows_equal_the_whole_shard_patched() -> None:
    import pyarrow as pa

    digest = "xxh3_128:" + "d" * 32
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(10_000, 40, replace=False))
    patches = CellPatches([(digest, int(row), int(row) + 1, (("label", 1),)) for row in rows])
    hashes = rng.integers(0, 2**63, 10_000).astype(np.uint64)
    table = pa.table({"label": pa.array(np.zeros(10_000, np.int64)), "__row_hash__": pa.array(hashes)})
    whole = patches.apply(digest, table).column("__row_hash__").to_numpy()
    for start, stop in [(0, 10_000), (17, 4000), (int(rows[3]), int(rows[9]) + 1), (9999, 10_000)]:
        part = patches.patched_row_hashes(digest, start, hashes[start:stop], 10_000)
        assert part.tolist() == whole[start:stop].tolist()
    assert hashes.tolist() == table.column("__row_hash__").to_pylist(), "the rows given are not changed"
    with pytest.raises(se.CacheCorruptionError, match="row 9999 of a shard of 5000 rows"):
        CellPatches([(digest, 9999, 1, (("label", 1),))]).patched_row_hashes(digest, 0, hashes[:10], 5000)


def _fail_staging_renames(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rename of a staging folder into place fails with EIO (the disk refuses it); others go through."""
    real = os.rename

    def rename(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if ".staging.tmp-" in os.fspath(source):
            raise OSError(5, "Input/output error", os.fspath(target))
        real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)


def test_a_save_whose_version_cannot_be_put_in_place_leaves_latest_and_no_file_of_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(home)
    _fail_staging_renames(monkeypatch)
    with pytest.raises(CacheWriteError, match="versions"):
        ds.relabel({5: "a"}).save(progress=False)
    monkeypatch.undo()
    assert sorted(p.name for p in (home / "p" / "refs").iterdir()) == ["latest"], "latest's new file was removed"
    assert se.load("p", home=home).version == ds.version


def test_a_first_build_whose_version_cannot_be_put_in_place_leaves_no_dataset_folder(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_staging_renames(monkeypatch)
    with pytest.raises(CacheWriteError):
        _build(home, 50)
    monkeypatch.undo()
    assert not (home / "p").exists(), "no refs/ folder made ahead for latest's new file"


def test_a_save_reads_its_version_back_before_latest_moves_and_its_flush_still_comes_first(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    ds = _build(home)
    draft = ds.relabel({5: "c", 700: "a"})
    opened: list[tuple[str, float]] = []
    recording = [True]

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if recording[0] and event == "open" and str(args[0]).endswith("_metadata.json"):
            opened.append((str(args[0]), time.perf_counter()))

    sys.addaudithook(audit)  # cannot be removed: it stops recording below
    recorded = _Recorder(monkeypatch, pause=_PAUSE, together=_TOGETHER)
    try:
        saved = draft.save(progress=False)
    finally:
        recording[0] = False
        monkeypatch.undo()
    versions = str((home / "p" / "versions").resolve())
    events = recorded.events
    placed = events[recorded.first("rename", lambda p: p.endswith(f"versions/{saved.version}"))][3]
    latest = recorded.first("rename", lambda p: p.endswith("refs/latest"))
    read = [at for path, at in opened if Path(path).parent == saved.cache_dir]
    assert read, opened
    # read back once the version is in place and before latest moves (where its flush runs), not after it all
    assert placed <= read[0] <= events[latest][2]
    assert versions in recorded.flushed_before(latest), "versions/ still flushed before latest moves"
    assert recorded.waits() == 3
    assert se.load("p", home=home).version == saved.version


def test_a_save_whose_versions_folder_cannot_be_flushed_publishes_nothing_and_names_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(home)
    versions = (home / "p" / "versions").resolve()
    real = os.fsync

    def fsync(fd: int) -> None:
        if Path(f"/proc/self/fd/{fd}").readlink() == versions:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(CacheWriteError, match="versions") as caught:
        ds.relabel({5: "a"}).save(progress=False)
    monkeypatch.undo()
    assert caught.value.errno == 5
    assert sorted(p.name for p in (home / "p" / "versions").iterdir()) == [ds.version], "taken back"
    assert se.load("p", home=home).version == ds.version
