"""ArrowBackend: routing across shards, take, slice, batches, open-shard bound, pickling, damaged shards."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from stable_explore import Features, Value
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.read.reader import ArrowBackend
from stable_explore.storage.write.writer import write_sharded_arrow_cache
from tests.conftest import write_pets


@pytest.fixture
def numbered(tmp_path: Path) -> ArrowBackend:
    """1000 rows in 7 shards of uneven size, several record batches each."""
    features = Features(x=Value("int64"), s=Value("string"), blob=Value("binary"))
    rows = ({"x": i, "s": f"s{i}", "blob": bytes([i % 256]) * (i % 7)} for i in range(1000))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "n", batch_size=40, shard_size_bytes=5000)
    assert meta.num_shards > 3
    return ArrowBackend.from_meta(read_sharded_cache_meta(tmp_path / "n"))


def xs(table: pa.Table) -> list[int]:
    return table.column("x").to_pylist()


def test_counts_come_from_metadata_without_opening_shards(numbered: ArrowBackend) -> None:
    assert numbered.num_rows == len(numbered) == 1000
    assert numbered.open_shard_count == 0
    assert sum(numbered.shard_row_counts) == 1000
    assert numbered.shard_offsets[-1] == 1000


def test_get_row_routes_to_the_right_shard(numbered: ArrowBackend) -> None:
    for i in (0, 39, 40, 41, 499, 998, 999, *numbered.shard_offsets[1:-1]):
        row = numbered.get_row(int(i))
        assert row["x"] == i
        assert row["s"] == f"s{i}"
        assert row["__key__"] == i
    with pytest.raises(IndexError, match="1000 is out of range for 1000 rows"):
        numbered.get_row(1000)
    with pytest.raises(IndexError):
        numbered.get_row(-1)


def test_take_across_shards_in_any_order_with_duplicates(numbered: ArrowBackend) -> None:
    boundaries = [int(b) for b in numbered.shard_offsets[1:-1]]
    picks = [999, boundaries[0], boundaries[0] - 1, 0, 0, boundaries[-1], 500, 999, 3]
    assert xs(numbered.take(picks)) == picks
    reverse = list(range(999, -1, -1))
    assert xs(numbered.take(reverse)) == reverse
    rng = np.random.default_rng(0)
    random = rng.integers(0, 1000, 700)
    table = numbered.take(random)
    assert xs(table) == random.tolist()
    assert table.column("blob").to_pylist()[:5] == [bytes([i % 256]) * (i % 7) for i in random[:5]]
    many = rng.integers(0, 1000, 5000)  # past the sparse path: one take per record batch, then reordered
    assert xs(numbered.take(many)) == many.tolist()
    assert numbered.take(many, columns=["s"]).column("s").to_pylist()[:3] == [f"s{i}" for i in many[:3]]
    assert xs(numbered.take(np.array([], dtype=np.int64))) == []
    assert xs(numbered.take(range(10, 20))) == list(range(10, 20))
    with pytest.raises(IndexError):
        numbered.take([1, 5000])


@pytest.mark.parametrize("count", [3_000, 9_000])  # under and over half of each shard's rows
def test_large_takes_keep_order_and_duplicates(tmp_path: Path, count: int) -> None:
    features = Features(x=Value("int64"), word=Value("string"))
    rows = ({"x": i, "word": f"w{i}"} for i in range(10_000))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "c", batch_size=500, shard_size_bytes=60_000)
    assert meta.num_shards >= 2
    backend = ArrowBackend.from_meta(read_sharded_cache_meta(tmp_path / "c"))
    indices = np.random.default_rng(count).integers(0, 10_000, size=count)  # any order, with repeats
    table = backend.take(indices)
    assert xs(table) == indices.tolist()
    assert table.column("word").to_pylist() == [f"w{i}" for i in indices]
    assert backend.take(indices, columns=["word"]).column_names == ["word"]


def test_take_copies_only_the_selected_rows(tmp_path: Path) -> None:
    features = Features(blob=Value("binary"))
    rows = ({"blob": bytes(10_000)} for _ in range(2000))
    meta = write_sharded_arrow_cache(rows, features, tmp_path / "big", batch_size=100)
    backend = ArrowBackend.from_meta(meta)
    before = pa.total_allocated_bytes()
    table = backend.take([1999, 5, 1000, 5])
    grown = pa.total_allocated_bytes() - before
    assert table.num_rows == 4
    # 4 rows of 10 kB, not the 20 MB column
    assert grown < 1_000_000, grown


def test_slice_spans_shards_and_clips(numbered: ArrowBackend) -> None:
    assert xs(numbered.slice(35, 100)) == list(range(35, 135))
    assert xs(numbered.slice(990, 100)) == list(range(990, 1000))
    assert xs(numbered.slice(0, 1000)) == list(range(1000))
    assert numbered.slice(1000, 5).num_rows == 0


def test_iter_batches_in_order_and_shuffled(numbered: ArrowBackend) -> None:
    seen = [x for batch in numbered.iter_batches() for x in batch.column("x").to_pylist()]
    assert seen == list(range(1000))
    one = [x for b in numbered.iter_batches(shuffle=True, seed=3) for x in b.column("x").to_pylist()]
    two = [x for b in numbered.iter_batches(shuffle=True, seed=3) for x in b.column("x").to_pylist()]
    assert one == two
    assert one != seen
    assert sorted(one) == seen
    first_shard = [x for b in numbered.iter_batches(shard_indices=[0]) for x in b.column("x").to_pylist()]
    assert first_shard == list(range(numbered.shard_row_counts[0]))


def test_open_shards_are_bounded(tmp_path: Path) -> None:
    meta = write_sharded_arrow_cache(
        ({"x": i} for i in range(100)), Features(x=Value("int64")), tmp_path / "c", batch_size=10, shard_size_bytes=1
    )
    backend = ArrowBackend.from_meta(meta, max_open_shards=3)
    assert xs(backend.take(list(range(0, 100, 10)))) == list(range(0, 100, 10))
    assert backend.open_shard_count == 3
    assert xs(backend.slice(0, 100)) == list(range(100))


def test_pickle_carries_only_paths_and_counts(numbered: ArrowBackend) -> None:
    numbered.take([1, 900])
    data = pickle.dumps(numbered)
    assert len(data) < 4096
    clone = pickle.loads(data)
    assert clone.open_shard_count == 0
    assert xs(clone.take([900, 1])) == [900, 1]


def test_in_memory_table_backend() -> None:
    table = pa.table({"x": list(range(10))})
    backend = ArrowBackend(table=table)
    assert xs(backend.take([9, 2, 2])) == [9, 2, 2]
    assert xs(backend.slice(8, 5)) == [8, 9]
    assert pickle.loads(pickle.dumps(backend)).num_rows == 10
    with pytest.raises(ValueError, match="either"):
        ArrowBackend()


def test_table_and_column_cover_every_shard(numbered: ArrowBackend) -> None:
    assert numbered.table.num_rows == 1000
    assert numbered.column("x").to_pylist() == list(range(1000))


def test_truncated_shard_raises_in_a_subprocess_and_never_crashes(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 200, batch_size=50)
    target = meta.shard_paths[0]
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    script = textwrap.dedent(
        f"""
        from stable_explore.backend import ArrowBackend
        from stable_explore.errors import CacheCorruptionError
        backend = ArrowBackend(shard_paths=[{str(target)!r}], shard_row_counts=[200])
        try:
            backend.take([5, 150, 3]).to_pylist()
        except CacheCorruptionError as exc:
            print("raised:", exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"raised: {target}" in done.stdout


def test_random_byte_flips_never_crash_the_interpreter(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 120, batch_size=40)
    script = textwrap.dedent(
        f"""
        import random, shutil, pathlib
        from stable_explore.backend import ArrowBackend
        from stable_explore.cache import open_shard
        from stable_explore.errors import CacheCorruptionError
        source = pathlib.Path({str(meta.shard_paths[0])!r})
        clean = source.read_bytes()
        work = pathlib.Path({str(tmp_path / "fuzz.arrow")!r})
        rng = random.Random(1234)
        outcomes = {{"raised": 0, "read": 0}}
        for trial in range(150):
            data = bytearray(clean)
            for _ in range(rng.choice([1, 1, 2, 8])):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            work.write_bytes(bytes(data))
            try:
                backend = ArrowBackend(shard_paths=[work], shard_row_counts=[120])
                table = backend.take([3, 100, 7, 3])
                table.to_pylist()
                backend.slice(0, 120).column("name").to_pylist()
                outcomes["read"] += 1
            except CacheCorruptionError:
                outcomes["raised"] += 1
        print(outcomes)
        assert outcomes["raised"] > 0 and outcomes["read"] > 0
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"interpreter died with {done.returncode}: {done.stderr[-2000:]}"
    assert "raised" in done.stdout
