"""Joining a parallel build's task shards: the cross-task key check runs unless the keys are provably row indices."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
import stable_explore.storage.write.merge as merge
from stable_explore import Features, Value
from stable_explore.schema.columns import KEY_COLUMN
from stable_explore.storage.read.shard_file import read_shard_batches
from stable_explore.storage.write.merge import TaskShards, merge_task_shards, rekey_task_shards
from stable_explore.storage.write.writer import write_shards

F = Features(x=Value("int64"))


def task_shards(staging: Path, index: int, rows: list[Any]) -> TaskShards:
    """One task's shards, as run_task writes them: plain dicts keyed by their index in the task."""
    folder = staging / f"task-{index}"
    folder.mkdir()
    fields = write_shards(((i, {"x": x}) for i, x in enumerate(rows)), F, folder)
    return TaskShards.of_fields(folder, fields, default_keys=[(0, len(rows))] if rows else [])


def keys_of(staging: Path, merged: dict[str, Any]) -> list[int]:
    return [k for name in merged["shard_filenames"] for b in read_shard_batches(staging / name)
            for k in b.column(KEY_COLUMN).to_pylist()]  # fmt: skip


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cross-task key checks (each still runs: a spy, not a stand-in)."""
    calls: list[int] = []
    real: Callable[..., None] = merge.check_unique_keys

    def counted(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(merge, "check_unique_keys", counted)
    return calls


def test_rekeyed_tasks_keyed_by_row_index_skip_the_key_check(tmp_path: Path, checks: list[int]) -> None:
    parts = [task_shards(tmp_path, 0, [1, 2]), task_shards(tmp_path, 1, []), task_shards(tmp_path, 2, [3, 4, 5])]
    parts[2] = rekey_task_shards(parts[2], offset=2)
    assert (parts[2].default_keys, parts[2].key_offset) == (((0, 3),), 2)
    merged = merge_task_shards(tmp_path, parts, F)
    assert keys_of(tmp_path, merged) == [0, 1, 2, 3, 4]
    assert checks == []


def test_default_keys_not_shifted_by_the_rows_before_are_checked_and_refused(tmp_path: Path, checks: list[int]) -> None:
    parts = [task_shards(tmp_path, 0, [1, 2]), task_shards(tmp_path, 1, [3, 4, 5])]
    parts[1] = rekey_task_shards(parts[1], offset=1)  # one row short: keys 1, 2, 3 repeat key 1
    with pytest.raises(se.DuplicateKeyError):
        merge_task_shards(tmp_path, parts, F)
    assert checks == [1]


def test_tasks_never_rekeyed_are_checked_and_refused(tmp_path: Path, checks: list[int]) -> None:
    parts = [task_shards(tmp_path, 0, [1, 2]), task_shards(tmp_path, 1, [3, 4])]
    with pytest.raises(se.DuplicateKeyError):
        merge_task_shards(tmp_path, parts, F)
    assert checks == [1]


def test_a_rewrite_of_keys_stops_when_its_build_has_stopped_and_leaves_nothing(tmp_path: Path) -> None:
    task = task_shards(tmp_path, 1, [3, 4, 5])
    stop = tmp_path / "CANCEL"
    stop.touch()
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(KeyboardInterrupt):
        rekey_task_shards(task, offset=2, stop_file=str(stop))
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "no rewritten folder is left"
    stop.unlink()
    assert rekey_task_shards(task, offset=2, stop_file=str(stop)).key_offset == 2  # not stopped: rewritten
