"""Reads of a version made of many segments (runs of rows of several shard files), as a chain of saves makes."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from stable_explore import CacheCorruptionError, Features, Value
from stable_explore.storage.read.layout import ShardLayout
from stable_explore.storage.read.mapped import MappedReader
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.writer import write_sharded_arrow_cache

if TYPE_CHECKING:
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta


@pytest.fixture
def files(tmp_path: Path) -> ShardedCacheMeta:
    """600 rows in 5 shard files of 120 rows, in record batches of 40 (x = the row's number)."""
    features = Features(x=Value("int64"), s=Value("string"), blob=Value("binary"))
    rows = ({"x": i, "s": f"s{i}", "blob": bytes([i % 256]) * (i % 5)} for i in range(600))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "c", batch_size=40, shard_size_bytes=4000)
    meta = read_sharded_cache_meta(tmp_path / "c")
    assert meta.num_shards >= 3
    assert meta.batch_digests is not None
    return meta


def _segments(meta: ShardedCacheMeta, count: int, seed: int) -> list[tuple[int, int, int]]:
    """Random runs of the files: single rows, runs inside a batch, runs over many batches, whole files."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        shard = int(rng.integers(meta.num_shards))
        rows = meta.shard_row_counts[shard]
        length = int(rng.choice([1, 3, 40, 97, rows]))
        length = min(length, rows)
        start = int(rng.integers(0, rows - length + 1))
        out.append((shard, start, length))
    return out


def _backend(meta: ShardedCacheMeta, segments: list[tuple[int, int, int]]) -> MappedReader:
    counts = meta.shard_row_counts
    layout = ShardLayout.of(meta.shard_paths, counts, segments=segments, batch_digests=meta.batch_digests)
    return MappedReader(layout)


def _expected_x(meta: ShardedCacheMeta, segments: list[tuple[int, int, int]]) -> list[int]:
    firsts = np.cumsum([0, *meta.shard_row_counts])
    return [int(firsts[shard]) + row for shard, start, count in segments for row in range(start, start + count)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slices_over_many_segments_hold_the_rows_of_every_segment_in_order(files: ShardedCacheMeta, seed: int) -> None:
    segments = _segments(files, 120, seed)
    backend = _backend(files, segments)
    expected = _expected_x(files, segments)
    assert backend.slice(0, len(expected)).column("x").to_pylist() == expected
    rng = np.random.default_rng(seed)
    for _ in range(20):  # slices that start and end inside segments and batches
        start = int(rng.integers(0, len(expected)))
        length = int(rng.integers(1, len(expected)))
        table = backend.slice(start, length, columns=["s", "x"])
        assert table.column_names == ["s", "x"]
        assert table.column("x").to_pylist() == expected[start : start + length]
        assert table.column("s").to_pylist() == [f"s{x}" for x in expected[start : start + length]]
    whole = backend.slice(0, len(expected))
    assert whole.column("blob").to_pylist()[:50] == [bytes([x % 256]) * (x % 5) for x in expected[:50]]


def test_a_read_frees_its_shards_when_dropped_without_waiting_for_a_garbage_collection(files: ShardedCacheMeta) -> None:
    gc.collect()
    gc.disable()
    try:
        backend = _backend(files, _segments(files, 60, 3))
        table = backend.slice(0, backend.num_rows)
        alive = weakref.ref(backend)
        del backend, table
        assert alive() is None  # no cycle through the open shards' checks: the memory maps close now
    finally:
        gc.enable()


def test_a_damaged_batch_in_a_segmented_read_is_refused_naming_rows_of_the_version(files: ShardedCacheMeta) -> None:
    from stable_explore.storage.kept import forget

    segments = [(1, 0, 5), (0, 60, 30), (2, 0, 2)] * 10  # file 0's rows 60-89: its batches 1 and 2
    path = files.shard_paths[0]
    data = path.read_bytes()
    offset = data.index((61).to_bytes(8, "little") + (62).to_bytes(8, "little"))
    path.write_bytes(data[:offset] + bytes([data[offset] ^ 0x40]) + data[offset + 1 :])
    forget()
    backend = _backend(files, segments)
    with pytest.raises(CacheCorruptionError, match=r"record batch 1, column 'x' .*rows 5-24, 42-61, "):
        backend.slice(0, backend.num_rows)
