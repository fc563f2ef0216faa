"""Issue 21 item 3: a version that stable-datasets' reader would misread is refused by it; a plain one it reads.

``stable_datasets_read`` below does what stable-datasets' ``read_sharded_cache_meta`` and ``read_shard`` do (and what
stable-datasets' ``ArrowBackend`` builds on): it checks ``cache_format_version == 1``, the shard counts and
files, then reads every listed shard whole, in order, knowing nothing of stable-explore's fields.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import stable_explore as se

FEATURES = se.Features(
    label=se.ClassLabel(names=["cat", "dog"]), flag=se.ClassLabel(names=["x", "y"]), n=se.Value("int64")
)
COLUMNS = list(FEATURES)
ROWS = 300


def stable_datasets_read(cache_dir: Path) -> pa.Table:
    """stable-datasets' reader: the version check, the consistency checks, then every shard whole."""
    raw = json.loads((cache_dir / "_metadata.json").read_text())
    version = raw.get("cache_format_version")
    if version != 1:
        msg = f"Unsupported cache format version {version} (expected 1)"
        raise ValueError(msg)
    names, counts = raw["shard_filenames"], raw["shard_row_counts"]
    if len(names) != raw["num_shards"] or len(counts) != raw["num_shards"]:
        msg = "Metadata claims another number of shards"
        raise ValueError(msg)
    if sum(counts) != raw["num_rows"]:
        msg = "Sum of shard_row_counts != num_rows"
        raise ValueError(msg)
    for name in names:
        if not (cache_dir / name).exists():
            msg = f"Missing shard file: {cache_dir / name}"
            raise ValueError(msg)
    tables = [ipc.open_file(pa.memory_map(str(cache_dir / name), "r")).read_all() for name in names]
    return pa.concat_tables(tables) if tables else pa.table({})


def _build(home: Path) -> se.CachedDataset:
    rows = ((f"k{i:03d}", {"label": i % 2, "flag": 0, "n": i}) for i in range(ROWS))
    built = se.build(rows, FEATURES, name="pets", home=home, progress=False, shard_size="1KB", batch_size=100)
    assert built.num_shards == 3
    return built


def _same_rows(ds: se.CachedDataset) -> None:
    assert stable_datasets_read(ds.cache_dir).select(COLUMNS).to_pylist() == ds.to_arrow().select(COLUMNS).to_pylist()


def _raw(ds: se.CachedDataset) -> dict[str, object]:
    return json.loads((ds.cache_dir / "_metadata.json").read_text())  # type: ignore[no-any-return]


def test_a_seed_reader_reads_a_plain_version_as_stable_explore_does(home: Path) -> None:
    built = _build(home)
    assert _raw(built)["cache_format_version"] == 1
    _same_rows(built)
    # a save that keeps every shard whole and in order, and patches nothing, is plain too
    smaller = built.drop(range(100)).save(progress=False)
    assert _raw(smaller)["cache_format_version"] == 1
    _same_rows(smaller)
    # a save that writes its edited rows anew reads runs of files: refused, never misread
    rewritten = built.set(5, "n", -1).relabel({5: "dog"}).save(progress=False)
    assert "cell_patches" not in _raw(rewritten)
    assert _raw(rewritten)["cache_format_version"] == 2
    with pytest.raises(ValueError, match="Unsupported cache format version 2"):
        stable_datasets_read(rewritten.cache_dir)


def test_a_seed_reader_refuses_a_relabel_only_save(home: Path) -> None:
    built = _build(home)
    saved = built.relabel({1: "cat"}).relabel({1: "y"}, column="flag").save(progress=False)
    raw = _raw(saved)
    assert "cell_patches" in raw  # the rows stay in the parent's files, patched
    assert raw["cache_format_version"] == 2
    with pytest.raises(ValueError, match="Unsupported cache format version 2"):
        stable_datasets_read(saved.cache_dir)
    # stable-explore reads it, with the patches, as does a fresh load
    assert saved[1]["label"] == 0
    assert saved[1]["flag"] == 1
    fresh = se.load(saved.cache_dir)
    assert fresh.to_arrow().select(["label", "flag"]).to_pylist()[:3] == [
        {"label": 0, "flag": 0},
        {"label": 0, "flag": 1},
        {"label": 0, "flag": 0},
    ]
    assert se.verify(fresh).num_rows == ROWS
    assert not se.fsck(home=home).problems


def test_every_later_save_of_a_patched_version_is_refused_too(home: Path) -> None:
    built = _build(home)
    first = built.relabel({1: "cat"}).save(progress=False)
    second = first.relabel({3: "cat"}).save(progress=False)
    third = second.drop([0]).save(progress=False)
    for version in (first, second, third):
        assert "cell_patches" in _raw(version)
        with pytest.raises(ValueError, match="Unsupported cache format version"):
            stable_datasets_read(version.cache_dir)
    assert third.to_arrow().column("label").to_pylist()[:4] == [0, 0, 0, 0]
