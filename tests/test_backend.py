"""stable_explore.backend, stable-datasets' name: ``ArrowBackend`` reads its caches and ours the way it does.

The backend's own behaviour (routing, take, slice, batches, pickling, damaged shards) is tested in
tests/storage/read/test_reader.py; here, only what code written against stable-datasets' ``ArrowBackend`` relies on.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from stable_explore import Features, Value, backend
from stable_explore.backend import ArrowBackend
from stable_explore.cache import read_sharded_cache_meta, write_sharded_arrow_cache
from stable_explore.storage.read import reader
from tests.conftest import write_stable_datasets_v1_cache


def test_the_facade_is_the_storage_reader() -> None:
    assert backend.__all__ == ["ArrowBackend"]
    assert ArrowBackend is reader.ArrowBackend


@pytest.fixture
def seed_cache(tmp_path: Path) -> Path:
    """A seed-000 cache of 10 rows in shards of 4, 4 and 2 rows."""
    tables = [pa.table({"x": pa.array(range(start, min(start + 4, 10)), pa.int64())}) for start in (0, 4, 8)]
    write_stable_datasets_v1_cache(tmp_path / "seed", tables)
    return tmp_path / "seed"


def test_seed_001_style_construction_from_paths_and_counts(seed_cache: Path) -> None:
    paths = sorted(seed_cache.glob("shard-*.arrow"))
    backend = ArrowBackend(shard_paths=paths, shard_row_counts=[4, 4, 2])
    assert (backend.num_rows, len(backend), backend.num_shards) == (10, 10, 3)
    assert backend.get_row(9) == {"x": 9}
    assert backend.take([9, 0, 4, 4]).column("x").to_pylist() == [9, 0, 4, 4]
    assert backend.slice(3, 3).column("x").to_pylist() == [3, 4, 5]
    assert backend.shard_offsets.tolist() == [0, 4, 8, 10]
    counted = ArrowBackend(shard_paths=[str(p) for p in paths])  # counts read from the files when not given
    assert counted.shard_row_counts == [4, 4, 2]
    assert pickle.loads(pickle.dumps(backend)).take([5]).column("x").to_pylist() == [5]
    with pytest.raises(ValueError, match="3 shard paths but 2 row counts"):
        ArrowBackend(shard_paths=paths, shard_row_counts=[4, 4])


def test_from_meta_opens_a_seed_cache_and_ours_alike(seed_cache: Path, tmp_path: Path) -> None:
    seed = ArrowBackend.from_meta(read_sharded_cache_meta(seed_cache))
    assert seed.column("x").to_pylist() == list(range(10))
    meta = write_sharded_arrow_cache(({"x": i} for i in range(10)), Features(x=Value("int64")), tmp_path / "ours",
                                     batch_size=4, shard_size_bytes=1)  # fmt: skip
    ours = ArrowBackend.from_meta(meta)
    assert ours.column("x").to_pylist() == list(range(10))
    assert ours.shard_row_counts == seed.shard_row_counts == [4, 4, 2]
    assert ours.schema.names == ["x", "__key__", "__row_hash__"]  # our two row columns travel with the rows
