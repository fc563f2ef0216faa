"""A build refuses a repeated key, naming the key and both rows; nothing is published (issue 11)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import Features, Value

NUM = Features(x=Value("int64"))


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test here has its own catalog home: the user's cache is never touched."""
    home = tmp_path / "catalog"
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(home))
    return home


def test_a_repeated_key_in_one_batch_is_refused_and_nothing_is_published(own_home: Path) -> None:
    kept = se.build([("a", {"x": 1})], NUM, name="keys", progress=False)
    rows = [("a", {"x": 1}), ("b", {"x": 2}), ("c", {"x": 3}), ("b", {"x": 4})]
    with pytest.raises(se.DuplicateKeyError) as caught:
        se.build(rows, NUM, name="keys", progress=False)
    error = caught.value
    assert str(error) == (
        "duplicate key: rows 1 and 3 both have key 'b'; keys must be unique, as rows are matched by key across versions"
    )
    assert (error.key, error.first_index, error.index) == ("b", 1, 3)
    assert isinstance(error, ValueError)
    note = f"4 rows were read; nothing was saved; keys@{kept.version} is kept as the latest version"
    assert error.__notes__[-1] == note
    assert [p.name for p in (own_home / "keys" / "versions").iterdir()] == [kept.version]
    assert se.load("keys").version == kept.version


def test_a_repeated_key_across_batches_and_shards_is_found_when_the_last_shard_is_sealed(tmp_path: Path) -> None:
    rows = [(f"k{i}", {"x": i}) for i in range(3000)] + [("k1234", {"x": -1})]
    with pytest.raises(se.DuplicateKeyError, match="rows 1234 and 3000 both have key 'k1234'"):
        se.build(rows, NUM, name="keys", batch_size=100, shard_size="16KiB", progress=False)
    assert not (tmp_path / "catalog" / "keys" / "versions").exists() or not any(
        p for p in (tmp_path / "catalog" / "keys" / "versions").iterdir() if not p.name.startswith(".")
    )


def test_int_keys_are_checked_exactly_and_unique_keys_pass(tmp_path: Path) -> None:
    with pytest.raises(se.DuplicateKeyError, match="rows 0 and 2005 both have key 0"):
        se.build(((i % 2005, {"x": i}) for i in range(2010)), NUM, name="ints", batch_size=1000, progress=False)
    ds = se.build(((i * 7, {"x": i}) for i in range(5000)), NUM, name="ints", batch_size=999, progress=False)
    assert len(ds) == 5000


def test_the_magic_refuses_a_repeated_key_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext stable_explore")
    shell.user_ns["features"] = NUM
    shell.run_cell("def twice():\n    yield 'a', {'x': 1}\n    yield 'a', {'x': 2}\n")
    result = shell.run_cell("%stable_cache dup = twice() --features features --quiet")
    assert isinstance(result.error_in_exec, se.StableCacheError)
    assert str(result.error_in_exec) == (
        "duplicate key: rows 0 and 1 both have key 'a'; keys must be unique, as rows are matched by key across "
        "versions; 2 rows were read; nothing was saved; no version of dup existed before"
    )
    shell.run_cell("%unload_ext stable_explore")
    capsys.readouterr()


def test_the_check_holds_eight_bytes_a_row_not_the_keys(tmp_path: Path) -> None:
    """200k string keys: the check keeps 64-bit hashes (1.6 MB, 3.2 MB while sorting), never the keys."""
    from stable_explore.storage.write.key_check import KeyCheck

    n, batch = 200_000, 10_000
    check = KeyCheck(tmp_path)
    tracemalloc.start()
    try:
        for first in range(0, n, batch):
            keys = [f"a-rather-long-key-{i:012d}" for i in range(first, first + batch)]
            check.add(keys, pa.array(keys), first)
        assert len(check.repeated_hashes()) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * n + 8 * n + 4 * 2**20  # hashes, their sorted copy, one batch of keys
    assert np.uint64(0).nbytes == 8
