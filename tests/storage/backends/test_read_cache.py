"""The read-through cache of remote shards: bounded, least recently used out first, shared by processes."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.ipc as ipc

from stable_explore.catalog.parallel.executor import make_main_spawnable
from stable_explore.storage.backends.local import LocalStore
from stable_explore.storage.backends.read_cache import (
    BLOCK_SIZE,
    CACHE_ENV,
    CACHE_SIZE_ENV,
    ReadCache,
    default_read_cache,
)
from stable_explore.storage.backends.remote_file import FETCHED, RemoteShardFile

if TYPE_CHECKING:
    import pytest


def test_a_block_round_trips_and_a_missing_one_is_none(tmp_path: Path) -> None:
    cache = ReadCache(tmp_path)
    assert cache.get("d1", 0) is None
    cache.put("d1", 0, b"abc")
    assert cache.get("d1", 0) == b"abc"
    assert cache.get("d1", 1) is None
    assert cache.get("d2", 0) is None
    assert not list(tmp_path.rglob("*.tmp")), "no temp file is left behind"


def test_the_cache_stays_under_its_limit_and_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = ReadCache(tmp_path, limit=5 * BLOCK_SIZE)
    block = b"x" * BLOCK_SIZE
    for i in range(4):
        cache.put("old", i, block)
        time.sleep(0.01)
    assert cache.get("old", 0) == block  # used again: now the youngest
    for i in range(20):
        cache.put("new", i, block)
        assert cache.size() <= cache.limit
    assert cache.get("new", 19) == block, "the newest block is kept"
    assert cache.get("old", 1) is None, "an old block nobody read again is gone"


def _fill(root: str, digest: str) -> None:
    cache = ReadCache(root, limit=8 * BLOCK_SIZE)
    for i in range(30):
        cache.put(digest, i, bytes([i % 256]) * BLOCK_SIZE)
        got = cache.get(digest, i)
        assert got is None or got == bytes([i % 256]) * BLOCK_SIZE  # whole or absent, never torn


def test_processes_share_one_cache_safely(tmp_path: Path) -> None:
    make_main_spawnable()  # an IPython shell of an earlier test on this worker may have swapped __main__
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill, args=(str(tmp_path), f"shard{n}")) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = ReadCache(tmp_path, limit=8 * BLOCK_SIZE)
    # each process evicts once its own count passes the limit: at most one more block each in flight
    assert cache.size() <= cache.limit + 3 * BLOCK_SIZE
    assert not list(tmp_path.rglob("*.tmp"))


def test_settings_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    monkeypatch.setenv(CACHE_SIZE_ENV, "3MB")
    cache = default_read_cache()
    assert cache.root == tmp_path / "c"
    assert cache.limit == 3 * 1024 * 1024
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "home"))
    assert default_read_cache().root == tmp_path / "home" / ".remote-cache"


def test_a_shard_read_by_range_fetches_each_block_once(tmp_path: Path) -> None:
    table = pa.table({"x": pa.array(range(200_000)), "s": pa.array([f"row {i}" for i in range(200_000)])})
    shard = tmp_path / "store" / "shard.arrow"
    shard.parent.mkdir()
    with ipc.new_file(str(shard), table.schema) as writer:
        for batch in table.to_batches(max_chunksize=20_000):
            writer.write_batch(batch)
    size = shard.stat().st_size
    cache = ReadCache(tmp_path / "cache")
    FETCHED.reset()
    reader = ipc.open_file(pa.PythonFile(RemoteShardFile(LocalStore(shard.parent), "shard.arrow", size, "dg", cache)))
    assert reader.get_batch(9).column(0)[0].as_py() == 180_000
    first = FETCHED.bytes
    assert 0 < first < size / 4, "the footer and one batch, not the file"
    again = ipc.open_file(pa.PythonFile(RemoteShardFile(LocalStore(shard.parent), "shard.arrow", size, "dg", cache)))
    assert again.read_all().equals(table)
    assert FETCHED.bytes <= size + BLOCK_SIZE, "no block is fetched twice"
    third = ipc.open_file(pa.PythonFile(RemoteShardFile(LocalStore(shard.parent), "shard.arrow", size, "dg", cache)))
    before = FETCHED.bytes
    assert third.read_all().equals(table)
    assert FETCHED.bytes == before, "everything now comes from the cache"
    assert shard.stat().st_size == size
