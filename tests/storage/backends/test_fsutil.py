"""Durable file-system steps: early writeback of a file being written."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stable_explore.storage.backends import fsutil as _fsutil
from stable_explore.storage.backends.fsutil import fsync_path, start_writeback


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux-only")
def test_linux_starts_writeback_for_real(tmp_path: Path) -> None:
    # start_writeback ignores failures (it is a hint), so check the call itself succeeds here:
    # a wrong constant or argument type would otherwise silently leave all the work to fsync.
    assert _fsutil.writeback_supported()
    function = _fsutil._sync_file_range()
    with (tmp_path / "f.bin").open("wb", buffering=0) as f:
        f.write(os.urandom(2**20))
        assert function(f.fileno(), 0, 2**20, _fsutil._SYNC_FILE_RANGE_WRITE) == 0


def test_start_writeback_keeps_the_file_as_written(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(3 * 2**20)
    with path.open("wb", buffering=0) as f:
        f.write(data[: 2**20])
        start_writeback(f.fileno(), 0, 2**20)
        f.write(data[2**20 :])
        start_writeback(f.fileno(), 2**20, 0)  # an empty range is a no-op
        start_writeback(f.fileno(), 2**20, 2 * 2**20)
    fsync_path(path)
    assert path.read_bytes() == data


def test_flushes_side_by_side_start_a_few_threads_per_process_not_some_per_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from stable_explore.storage.backends.fsutil import fsync_together

    started: list[str] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:  # the real start, recorded
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    for round_ in range(20):  # a save no longer waits for new threads to start before its flushes begin
        paths = [tmp_path / f"{round_}-{i}" for i in range(4)]
        for path in paths:
            path.write_bytes(b"x" * 100)
        fsync_together([*paths, tmp_path])
    assert len(started) <= 8, started  # the pool kept for them (4 a call before: 80)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_forked_child_flushes_side_by_side_on_threads_of_its_own(tmp_path: Path) -> None:
    import multiprocessing

    from stable_explore.storage.backends.fsutil import fsync_together

    (tmp_path / "a").write_text("a")
    fsync_together([tmp_path / "a", tmp_path])  # the parent's threads exist before the fork
    child = multiprocessing.get_context("fork").Process(target=_flush_in_child, args=(tmp_path,))
    child.start()
    child.join(60)
    assert child.exitcode == 0  # not hung waiting for threads the child does not have


def _flush_in_child(folder: Path) -> None:
    from stable_explore.storage.backends.fsutil import fsync_together

    paths = [folder / f"child-{i}" for i in range(3)]
    for path in paths:
        path.write_text("c")
    fsync_together([*paths, folder])


def test_a_temp_dir_is_removed_even_when_a_late_file_stops_the_first_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stopped parallel build's worker may finish a file in the staging folder as it is removed: rmtree then
    # fails to remove the folder (not empty) and, ignoring errors, leaves it with the late file.
    real_rmtree = _fsutil.shutil.rmtree
    passes: list[Path] = []

    def a_file_comes_late(path: Path, ignore_errors: bool = False) -> None:
        passes.append(Path(path))
        real_rmtree(path, ignore_errors=ignore_errors)
        if len(passes) == 1:  # as if written between the pass's listing and its rmdir
            (Path(path) / "tasks").mkdir(parents=True)
            (Path(path) / "tasks" / "shard-00000.arrow").write_bytes(b"late")

    monkeypatch.setattr(_fsutil.shutil, "rmtree", a_file_comes_late)

    def stopped_while_staging() -> None:
        with _fsutil.temp_dir_beside(tmp_path / "versions" / "staging") as staging:
            (staging / "tasks").mkdir()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stopped_while_staging()
    assert len(passes) == 2
    assert list((tmp_path / "versions").iterdir()) == [], "nothing of the staging folder is left"
