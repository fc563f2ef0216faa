"""stable_explore.cache, seed 000's names: the layout and fields seed 000 wrote, and its caches open."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from stable_explore import ClassLabel, Features, Image, SchemaError, Value, verify
from stable_explore.backend import ArrowBackend
from stable_explore.cache import read_sharded_cache_meta, validate_sharded_cache
from tests.conftest import NAMES, write_pets, write_seed_v1_cache


def test_layout_and_metadata_keep_seed_fields_and_add_ours(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 250, batch_size=50, shard_size_bytes=1)
    assert meta.num_rows == 250
    assert meta.num_shards == 5
    assert meta.shard_row_counts == [50] * 5
    files = sorted(p.name for p in (tmp_path / "pets").iterdir())
    assert files == ["_metadata.json"] + [f"shard-{i:05d}.arrow" for i in range(5)]
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


def test_seed_v1_cache_opens_validates_and_verifies(tmp_path: Path, jpegs) -> None:
    tables = [
        pa.table({"image": pa.array(jpegs[:3], pa.binary()), "label": pa.array([0, 1, 2], pa.int64())}),
        pa.table({"image": pa.array(jpegs[3:5], pa.binary()), "label": pa.array([2, 2], pa.int64())}),
    ]
    write_seed_v1_cache(tmp_path / "seed", tables)
    meta = read_sharded_cache_meta(tmp_path / "seed")
    assert meta.is_seed_v1
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
