"""A version's own record (``VersionMetadata``), checked once when read, and the version id it implies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stable_explore import CacheCorruptionError, Features, Value
from stable_explore.storage.format.metadata import VersionMetadata, version_id_of
from stable_explore.storage.read.open_meta import read_sharded_cache_meta
from stable_explore.storage.write.writer import write_sharded_arrow_cache

DEFINING = {
    "features": {"x": {"_type": "Value", "dtype": "int64"}},
    "content_digest": "xxh3_128:00",
    "num_rows": 3,
    "description": "three",
    "license": "CC0-1.0",
    "metadata": {"by": "ada"},
}


def test_a_version_id_is_sixteen_hex_digits_of_what_defines_the_content() -> None:
    version_id = version_id_of(DEFINING)
    assert len(version_id) == 16
    int(version_id, 16)
    assert version_id_of(dict(reversed(DEFINING.items()))) == version_id  # key order does not matter


@pytest.mark.parametrize("field", ["features", "content_digest", "num_rows", "description", "license", "metadata"])
def test_the_content_and_its_labels_change_the_id(field: str) -> None:
    changed = {**DEFINING, field: {"other": 1} if field in ("features", "metadata") else "other"}
    assert version_id_of(changed) != version_id_of(DEFINING)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "another-name"),
        ("created_at", "2030-01-01T00:00:00+00:00"),
        ("parent", "0123456789abcdef"),
        ("message", "a note"),
        ("operations", [{"op": "drop", "keys": [1]}]),
        ("source_fingerprint", "abc"),
        ("shard_filenames", ["shard-00007.arrow"]),
        ("version_id", "ffffffffffffffff"),
    ],
)
def test_names_times_lineage_and_storage_do_not_change_the_id(field: str, value: object) -> None:
    assert version_id_of({**DEFINING, field: value}) == version_id_of(DEFINING)


def test_no_metadata_and_empty_metadata_are_the_same() -> None:
    assert version_id_of({**DEFINING, "metadata": None}) == version_id_of({**DEFINING, "metadata": {}})


def test_a_seed_cache_records_nothing_and_reads_as_empty() -> None:
    meta = VersionMetadata.from_json({"cache_format_version": 1, "num_rows": 3}, "x/_metadata.json")
    assert meta == VersionMetadata()
    assert (meta.version_id, meta.parent, meta.operations, meta.metadata) == (None, None, (), {})


def test_the_record_round_trips_through_json() -> None:
    record = VersionMetadata(
        version_id=None,
        name="pets",
        created_at="2026-01-01T00:00:00+00:00",
        parent="0123456789abcdef",
        operations=({"op": "drop", "keys": ["a"]},),
        source_fingerprint="fp",
        source={"kind": "key", "key": "v1"},
        description="d",
        license="l",
        metadata={"by": "ada"},
        message="m",
    )
    assert VersionMetadata.from_json(json.loads(json.dumps(record.to_json())), "x") == record


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("description", 5, "'description' must be a string or null, found int 5"),
        ("parent", ["a"], "'parent' must be a string or null, found list"),
        ("version_id", {"a": 1}, "'version_id' must be a string or null, found dict"),
        ("operations", {"op": "drop"}, "'operations' must be a list of objects"),
        ("operations", ["drop"], "'operations' must be a list of objects"),
        ("source", "key", "'source' must be an object or null, found str"),
        ("metadata", ["by", "ada"], "'metadata' must be an object, found list"),
    ],
)
def test_a_field_of_the_wrong_type_names_the_field_and_the_file(field: str, value: object, needle: str) -> None:
    with pytest.raises(CacheCorruptionError, match=needle) as info:
        VersionMetadata.from_json({field: value}, "some/version/_metadata.json")
    assert info.value.path == Path("some/version/_metadata.json")


def test_a_tampered_field_on_disk_is_reported_when_the_version_is_read(tmp_path: Path) -> None:
    meta = write_sharded_arrow_cache(({"x": i} for i in range(3)), Features(x=Value("int64")), tmp_path / "c")
    meta_path = meta.cache_dir / "_metadata.json"
    raw = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**raw, "operations": "dropped everything"}))
    with pytest.raises(CacheCorruptionError, match="'operations' must be a list of objects") as info:
        read_sharded_cache_meta(meta.cache_dir)
    assert info.value.path == meta_path


def test_a_saved_versions_record_on_disk_is_what_version_record_json_declares(tmp_path: Path) -> None:
    import stable_explore as se
    from stable_explore.storage.format.metadata import VersionRecordJson
    from tests.typed_json import conforms

    built = se.build([{"x": i} for i in range(4)], Features(x=Value("int64")), name="n", home=tmp_path, progress=False)
    saved = built.drop([1]).save(message="drop one", description="three", metadata={"by": "ada", "n": [1, 2.5]})
    on_disk = json.loads((saved.cache_dir / "_metadata.json").read_text())
    written = saved.cache_meta.version_metadata.to_json()
    conforms(written, VersionRecordJson, "record")
    assert {name: on_disk.get(name) for name in written} == json.loads(json.dumps(written))
    assert written["operations"]
    assert written["message"] == "drop one"
