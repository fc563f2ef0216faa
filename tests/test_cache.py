"""stable_explore.cache, stable-datasets' names: the layout and fields stable-datasets wrote, and its caches open."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from stable_explore import ClassLabel, Features, Image, SchemaError, Value, cache, verify
from stable_explore.backend import ArrowBackend
from stable_explore.cache import read_shard, read_sharded_cache_meta, validate_sharded_cache
from stable_explore.storage.check import verify as storage_verify
from stable_explore.storage.format import cache_meta as storage_format
from stable_explore.storage.read import open_meta as storage_open_meta
from stable_explore.storage.read import shard_file as storage_shard_file
from stable_explore.storage.write import writer as storage_writer
from tests.conftest import NAMES, write_pets, write_stable_datasets_v1_cache


def test_layout_and_metadata_keep_seed_fields_and_add_ours(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 250, batch_size=50, shard_size_bytes=1)
    assert meta.num_rows == 250
    assert meta.num_shards == 5
    assert meta.shard_row_counts == [50] * 5
    files = sorted(p.name for p in (tmp_path / "pets").iterdir())
    shards = [f"shard-{i:05d}.{kind}" for i in range(5) for kind in ("arrow", "batches")]
    assert files == sorted(["_metadata.json", "content-runs.json", *shards])  # revision 4: small files beside
    raw = json.loads((tmp_path / "pets" / "_metadata.json").read_text())
    for seed_field in (
        "cache_format_version",
        "schema_fingerprint",
        "num_rows",
        "num_shards",
        "shard_row_counts",
        "shard_filenames",
        "shard_size_target_bytes",
    ):
        assert seed_field in raw
    assert raw["cache_format_version"] == 1
    assert Features.from_dict(raw["features"]) == pet_features
    assert all(h.startswith("xxh3_128:") for h in raw["shard_hashes"])
    assert raw["shard_sizes"] == [p.stat().st_size for p in meta.shard_paths]
    assert raw["key_type"] == "string"
    # nothing but the published directory and its lock is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pets.lock", "pets"]


def test_stable_datasets_v1_cache_opens_validates_and_verifies(tmp_path: Path, jpegs) -> None:
    tables = [
        pa.table({"image": pa.array(jpegs[:3], pa.binary()), "label": pa.array([0, 1, 2], pa.int64())}),
        pa.table({"image": pa.array(jpegs[3:5], pa.binary()), "label": pa.array([2, 2], pa.int64())}),
    ]
    write_stable_datasets_v1_cache(tmp_path / "seed", tables)
    meta = read_sharded_cache_meta(tmp_path / "seed")
    assert meta.is_stable_datasets_v1
    assert meta.features is None

    features = Features(image=Image(), label=ClassLabel(names=NAMES))
    assert validate_sharded_cache(tmp_path / "seed", features).num_rows == 5
    with pytest.raises(SchemaError, match="no column 'name'"):
        validate_sharded_cache(tmp_path / "seed", Features(name=Value("string")))
    backend = ArrowBackend.from_meta(meta)
    assert backend.schema.field("image").type == pa.large_binary()
    assert backend.take([4, 0]).column("image").to_pylist() == [jpegs[4], jpegs[0]]
    report = verify(tmp_path / "seed")
    assert not report.hashed
    assert "no digests" in str(report)


def test_the_facade_keeps_seed_000s_names_over_the_storage_modules() -> None:
    seed_names = {"write_sharded_arrow_cache", "read_sharded_cache_meta", "validate_sharded_cache", "read_shard"}
    assert set(cache.__all__) >= {*seed_names, "ShardedCacheMeta"}
    for name in cache.__all__:
        homes = (storage_format, storage_open_meta, storage_shard_file, storage_verify, storage_writer)
        home = next(m for m in homes if hasattr(m, name))
        assert getattr(cache, name) is getattr(home, name), name
    assert cache.DEFAULT_SHARD_SIZE_BYTES == 256 * 1024 * 1024  # stable-datasets' default


def test_shards_are_plain_arrow_ipc_files_seed_000s_reader_can_read(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 30, batch_size=10, shard_size_bytes=1)
    raw = json.loads((meta.cache_dir / "_metadata.json").read_text())
    rows = []
    for name, count in zip(raw["shard_filenames"], raw["shard_row_counts"], strict=True):
        with pa.memory_map(str(meta.cache_dir / name)) as source:
            table = pa.ipc.open_file(source).read_all()  # what stable-datasets' reader does: no stable_explore involved
        assert table.num_rows == count
        rows.extend(table.column("name").to_pylist())
    assert rows == [f"n{i}" for i in range(30)]
    assert raw["shard_size_target_bytes"] == 1
    assert isinstance(read_shard(meta.shard_paths[0]), pa.Table)
