"""The on-disk format: _metadata.json and its checks, unsafe paths, truncated shards, row segments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import CacheCorruptionError, CachedDataset, CacheNotFoundError, Features, SchemaError, Value
from stable_explore.storage.read.open_meta import read_sharded_cache_meta, validate_sharded_cache
from stable_explore.storage.read.reader import ArrowBackend
from stable_explore.storage.read.shard_file import open_shard
from tests.conftest import write_pets


def test_truncated_shard_is_reported_with_its_path(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 200, batch_size=100, shard_size_bytes=1)
    target = meta.shard_paths[0]
    target.write_bytes(target.read_bytes()[:-300])
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow.*truncated"):
        read_sharded_cache_meta(meta.cache_dir)
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow"):
        open_shard(target)


def test_tampered_metadata_paths_are_rejected(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 5)
    (tmp_path / "x").write_bytes(meta.shard_paths[0].read_bytes())
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    for evil in ("../x", "/etc/passwd", "sub/shard.arrow", "..", "a\\b"):
        meta_path.write_text(json.dumps({**raw, "shard_filenames": [evil]}))
        with pytest.raises(CacheCorruptionError, match=r"_metadata\.json") as info:
            read_sharded_cache_meta(meta.cache_dir)
        assert info.value.path == meta_path


def test_symlinked_shard_pointing_outside_is_rejected(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 5)
    outside = tmp_path / "outside.arrow"
    meta.shard_paths[0].rename(outside)
    meta.shard_paths[0].symlink_to(outside)
    with pytest.raises(CacheCorruptionError, match="outside"):
        read_sharded_cache_meta(meta.cache_dir)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"num_rows": 999}, "add up"),
        ({"num_shards": 3}, "claims 3 shards"),
        ({"shard_row_counts": [-5]}, "non-negative"),
        ({"cache_format_version": 7}, "unsupported"),
        ({"features": {"x": {"_type": "Nope"}}}, "features"),
        ({"shard_hashes": "abc"}, "shard_hashes"),
    ],
)
def test_inconsistent_metadata_is_reported(tmp_path: Path, pet_features, jpegs, change: dict, needle: str) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 5)
    meta_path = meta.cache_dir / "_metadata.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), **change}))
    with pytest.raises(CacheCorruptionError, match=needle):
        read_sharded_cache_meta(meta.cache_dir)


def test_garbled_metadata_json_and_missing_cache(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 5)
    (meta.cache_dir / "_metadata.json").write_text("{not json")
    with pytest.raises(CacheCorruptionError, match="not valid JSON"):
        read_sharded_cache_meta(meta.cache_dir)
    with pytest.raises(CacheNotFoundError, match="no cache at"):
        read_sharded_cache_meta(tmp_path / "nowhere")
    (meta.cache_dir / "_metadata.json").unlink()
    with pytest.raises(FileNotFoundError):
        read_sharded_cache_meta(meta.cache_dir)


def test_validate_compares_the_schema(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 5)
    assert validate_sharded_cache(meta.cache_dir, pet_features).num_rows == 5
    with pytest.raises(SchemaError, match="rebuild"):
        validate_sharded_cache(meta.cache_dir, Features(x=Value("int64")))


def test_row_segments_are_checked_against_their_shards(tmp_path: Path, pet_features, jpegs) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 100, batch_size=50, shard_size_bytes=1)
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    del raw["metadata_digest"]  # hand-made segments, as metadata written before format revision 2
    del raw["content_runs"]  # (and before revision 3: no runs to count the rows again)
    raw["format_revision"] = 1
    segmented = {**raw, "cache_format_version": 2, "row_segments": [[1, 10, 40], [0, 0, 50]], "num_rows": 90}
    meta_path.write_text(json.dumps(segmented))
    again = read_sharded_cache_meta(meta.cache_dir)
    backend = ArrowBackend.from_meta(again)
    assert backend.num_rows == 90
    assert backend.take([0, 39, 40]).column("name").to_pylist() == ["n60", "n99", "n0"]
    for bad in ([[2, 0, 1]], [[0, 40, 20]], [[0, -1, 5]], [[0, 0, 0]], "x"):
        meta_path.write_text(json.dumps({**segmented, "row_segments": bad}))
        with pytest.raises(CacheCorruptionError, match=r"row segment|row_segments"):
            read_sharded_cache_meta(meta.cache_dir)
    meta_path.write_text(json.dumps({**segmented, "num_rows": 91}))
    with pytest.raises(CacheCorruptionError, match="add up"):
        read_sharded_cache_meta(meta.cache_dir)


def test_many_row_segments_are_checked_in_arrays_and_a_bad_one_is_still_named(
    tmp_path: Path, pet_features, jpegs
) -> None:
    meta = write_pets(tmp_path, pet_features, jpegs, 100, batch_size=50, shard_size_bytes=1)
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    for field in ("metadata_digest", "content_runs"):
        del raw[field]
    raw["format_revision"] = 1
    runs = [[i % 2, i % 50, 1] for i in range(300)]  # more runs than a loop checks: one pass in arrays
    segmented = {**raw, "cache_format_version": 2, "row_segments": runs, "num_rows": 300}
    meta_path.write_text(json.dumps(segmented))
    again = read_sharded_cache_meta(meta.cache_dir)
    assert again.row_segments == [tuple(run) for run in runs]
    assert ArrowBackend.from_meta(again).slice(0, 300).column("name").to_pylist()[:3] == ["n0", "n51", "n2"]
    for bad in ([0, 1, True], [0, 1.0, 1], [2, 0, 1], [0, 49, 2], [0, -1, 1], [0, 0, 0], [0, 0], "x", [0, 2**70, 1]):
        meta_path.write_text(json.dumps({**segmented, "row_segments": [*runs[:200], bad, *runs[201:]]}))
        with pytest.raises(CacheCorruptionError, match=r"row segment .* is not \[shard, start, count\]"):
            read_sharded_cache_meta(meta.cache_dir)


def test_row_segments_only_count_in_format_2(big_shards: CachedDataset, tmp_path: Path) -> None:
    import json

    from stable_explore.cache import read_sharded_cache_meta

    meta_path = big_shards.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    del raw["metadata_digest"]  # as a cache written before format revision 2 (the digest would refuse the edits)
    meta_path.write_text(json.dumps({**raw, "row_segments": [[0, 400, 10]]}))  # format 1: ignored
    assert read_sharded_cache_meta(big_shards.cache_dir).row_segments is None
    assert len(se.load(big_shards.cache_dir)) == 2000
    empty = {**raw, "cache_format_version": 2, "row_segments": [], "num_rows": 0}
    # an id (or digest runs) that no longer match the content would be refused when loaded
    del empty["version_id"], empty["content_runs"]
    meta_path.write_text(json.dumps(empty))
    reloaded = se.load(big_shards.cache_dir)
    assert len(reloaded) == 0
    assert reloaded._backend.num_rows == 0


def test_the_metadata_is_a_value_made_from_the_parsed_file(tmp_path: Path, pet_features, jpegs) -> None:
    """from_dict reads no file and gives what reading the folder gives; the value cannot be changed in place."""
    import dataclasses

    from stable_explore.storage.format.cache_meta import ShardedCacheMeta

    opened = write_pets(tmp_path, pet_features, jpegs, 30, batch_size=10, shard_size_bytes=1)
    raw = json.loads((opened.cache_dir / "_metadata.json").read_text())
    elsewhere = tmp_path / "no such folder"
    parsed = ShardedCacheMeta.from_dict(elsewhere, raw)  # nothing is read: the folder is not there
    assert parsed.to_dict() == raw
    assert (parsed.num_rows, parsed.shard_row_counts, parsed.shard_hashes) == (
        opened.num_rows,
        opened.shard_row_counts,
        opened.shard_hashes,
    )
    assert parsed.features is not None
    assert parsed.features.to_dict() == pet_features.to_dict()
    read = read_sharded_cache_meta(opened.cache_dir)
    assert ShardedCacheMeta.from_dict(opened.cache_dir, read.to_dict()) == read
    copied = parsed.to_dict()
    copied["num_rows"] = -1
    assert parsed.to_dict()["num_rows"] == 30  # to_dict is a copy
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.num_rows = 31  # type: ignore[misc]


def test_the_small_files_are_read_by_the_reader_the_value_is_given(tmp_path: Path, pet_features, jpegs) -> None:
    """from_dict alone reads no file: asking for a small file says how to read it; given the reader, it reads.

    The format's values hold a reader (storage.read.small_files.SMALL_FILES) instead of doing the I/O
    themselves; it travels with them to another process.
    """
    import pickle

    from stable_explore.errors import InvalidOptionError
    from stable_explore.storage.format.cache_meta import ShardedCacheMeta
    from stable_explore.storage.read.small_files import SMALL_FILES

    opened = write_pets(tmp_path, pet_features, jpegs, 30, batch_size=10, shard_size_bytes=1)
    raw = json.loads((opened.cache_dir / "_metadata.json").read_text())
    assert isinstance(raw["content_runs"], dict)
    assert "file" in raw["batch_digests"][0]
    bare = ShardedCacheMeta.from_dict(opened.cache_dir, raw)
    with pytest.raises(InvalidOptionError, match=r"_metadata\.json: .*read_sharded_cache_meta"):
        _ = bare.content_runs
    assert bare.batch_digests is not None
    with pytest.raises(InvalidOptionError, match=r"shard-00000\.batches: .*SMALL_FILES"):
        _ = bare.batch_digests[0]
    read = read_sharded_cache_meta(opened.cache_dir)
    given = ShardedCacheMeta.from_dict(opened.cache_dir, raw, files=SMALL_FILES)
    assert given == read
    assert given.content_runs == read.content_runs
    assert given.content_runs is not None
    assert sum(rows for rows, _ in given.content_runs) == 30
    assert given.batch_digests is not None
    assert given.batch_digests[0] == read.batch_digests[0]
    travelled = pickle.loads(pickle.dumps(read))
    assert travelled.files is SMALL_FILES
    assert travelled.content_runs == read.content_runs
