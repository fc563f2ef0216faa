"""se.compare: identical, relabel-only, drop-only, schema and metadata changes, repeated keys."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Value
from tests.conftest import pet_rows, write_stable_datasets_v1_cache

NUM = Features(x=Value("int64"))


def home_of(ds: CachedDataset) -> Path:
    return ds.cache_dir.parents[2]


def test_identical_versions_are_decided_from_ids(pets: CachedDataset) -> None:
    diff = se.compare(pets, se.load("pets", home=home_of(pets)))
    assert diff.identical
    assert diff.rows.changed == []
    # decided without reading a row, and still says every row is unchanged (diff --json read 0 here)
    assert diff.rows.unchanged == len(pets) == 300
    assert diff.to_dict()["rows"]["unchanged"] == 300
    assert diff.summary().startswith("identical")
    assert se.compare(f"pets@{pets.version[:6]}", "pets", home=home_of(pets)).identical


def test_relabel_only(pets: CachedDataset) -> None:
    fixed = pets.relabel({0: "dog", 3: "dog", 4: "cat"}).save(message="fix")
    diff = se.compare(pets, fixed)
    assert not diff.identical
    assert diff.rows.added == []
    assert diff.rows.removed == []
    assert diff.rows.changed == ["pet-00000", "pet-00003", "pet-00004"]
    assert diff.rows.changed_fields["pet-00003"] == {"label": ("cat", "dog")}
    assert diff.rows.changed_fields["pet-00004"] == {"label": ("dog", "cat")}
    assert diff.labels["label"]["relabelled"] == {("cat", "dog"): 2, ("dog", "cat"): 1}
    assert diff.labels["label"]["before"] == {"cat": 100, "dog": 100, "bird": 100}
    assert diff.labels["label"]["after"] == {"cat": 99, "dog": 101, "bird": 100}
    assert diff.summary() == "+0 -0 ~3 rows; label: cat->dog x2, dog->cat x1"
    assert len(diff.shards["identical"]) == 5
    assert diff.shards["only_a"] == [0]
    assert diff.metadata == {}
    assert diff.schema == {}
    frame = diff.to_pandas()
    assert frame["key"].tolist() == ["pet-00000", "pet-00003", "pet-00004"]
    assert frame["label_a"].tolist() == ["cat", "cat", "dog"]
    assert frame["label_b"].tolist() == ["dog", "dog", "cat"]
    data = json.loads(diff.to_json())
    assert data["rows"]["changed"]["pet-00004"] == {"label": ["dog", "cat"]}


def test_drop_only(pets: CachedDataset) -> None:
    smaller = pets.drop(range(10, 15)).save()
    diff = se.compare(pets, smaller)
    assert diff.rows.removed == [f"pet-{i:05d}" for i in range(10, 15)]
    assert diff.rows.added == []
    assert diff.rows.changed == []
    assert diff.summary() == "+0 -5 ~0 rows"
    back = se.compare(smaller, pets)
    assert back.rows.added == [f"pet-{i:05d}" for i in range(10, 15)]


def test_changed_content_names_the_fields(tmp_path: Path, pet_features: Features, jpegs: list[bytes]) -> None:
    a = se.build(pet_rows(20, jpegs), pet_features, name="p", home=tmp_path, progress=False)

    def edited():
        for key, example in pet_rows(20, jpegs):
            if key == "pet-00005":
                example = {**example, "image": jpegs[40], "name": "changed"}
            yield key, example

    b = se.build(edited(), pet_features, name="p", home=tmp_path, progress=False)
    diff = se.compare(a, b)
    assert diff.rows.changed == ["pet-00005"]
    fields = diff.rows.changed_fields["pet-00005"]
    assert set(fields) == {"image", "name"}
    assert fields["name"] == ("n5", "changed")
    assert fields["image"] == (jpegs[5], jpegs[40])
    assert "image: <" in str(diff)


def test_schema_change_new_column_and_renamed_class(tmp_path: Path) -> None:
    old = Features(label=ClassLabel(names=["cat", "dog"]), x=Value("int64"))
    new = Features(label=ClassLabel(names=["cat", "hound"]), x=Value("int64"), note=Value("string"))
    a = se.build([{"label": i % 2, "x": i} for i in range(6)], old, name="s", home=tmp_path, progress=False)
    b = se.build(
        [{"label": i % 2, "x": i, "note": "n"} for i in range(6)], new, name="s", home=tmp_path, progress=False
    )
    diff = se.compare(a, b)
    assert diff.schema["columns_added"] == ["note"]
    assert diff.schema["classes"]["label"] == {"renamed": {"dog": "hound"}}
    assert "schema changed" in diff.summary()
    assert len(diff.rows.changed) == 6  # every row has a new column
    assert diff.labels["label"]["after"] == {"cat": 3, "hound": 3}


def test_metadata_only_change_gives_a_new_id_and_the_same_rows(tmp_path: Path) -> None:
    features = Features(x=Value("int64"))
    rows = [{"x": i} for i in range(10)]
    a = se.build(rows, features, name="m", home=tmp_path, progress=False, description="first")
    b = se.build(rows, features, name="m", home=tmp_path, progress=False, description="second")
    assert a.version != b.version
    diff = se.compare(a, b)
    assert not diff.identical
    assert diff.metadata == {"description": ("first", "second")}
    assert (diff.rows.added, diff.rows.removed, diff.rows.changed) == ([], [], [])
    assert diff.rows.unchanged == 10
    assert len(diff.shards["identical"]) == 1
    assert diff.summary() == "+0 -0 ~0 rows; metadata: description"


def _version_with_repeated_keys(home: Path, keys: list[str], xs: list[int]) -> se.CachedDataset:
    """A version as builds made it before repeated keys were refused (tests/test_duplicate_keys.py)."""
    import pyarrow as pa

    from stable_explore.catalog import Catalog, publish_version
    from stable_explore.storage.backends.fsutil import temp_dir_beside
    from stable_explore.storage.format.hashing import ContentDigest, row_hashes
    from stable_explore.storage.format.metadata import VersionMetadata
    from stable_explore.storage.write.shards import ShardWriter
    from stable_explore.storage.write.writer import shard_metadata

    features = Features(x=Value("int64"))
    schema = features.to_arrow_schema(with_row_columns=True, key_type=pa.string())
    columns = [pa.array(xs, pa.int64())]
    hashes = row_hashes(columns)
    key_array = pa.array(keys, pa.string())
    digest = ContentDigest()
    digest.update(key_array, hashes)
    catalog = Catalog(home)
    with temp_dir_beside(catalog.versions_dir("r") / "staging") as staging:
        writer = ShardWriter(staging, schema)
        writer.write(pa.RecordBatch.from_arrays([*columns, key_array, pa.array(hashes, pa.uint64())], schema=schema))
        shards = writer.finish()
        fields = shard_metadata(
            features,
            shards,
            num_rows=len(keys),
            shard_size_bytes=1 << 20,
            key_type="string",
            compression=None,
            content_digest=digest.hexdigest(),
        )
        published = publish_version(catalog, "r", staging, fields, VersionMetadata())
    return se.load(f"r@{published.ref.version_id}", home=home)


def test_repeated_keys_are_reported_and_matched_in_order(tmp_path: Path) -> None:
    # builds refuse repeated keys now; versions made before that still compare
    a = _version_with_repeated_keys(tmp_path, ["k", "k", "j"], [1, 2, 3])
    b = _version_with_repeated_keys(tmp_path, ["k", "k", "j"], [1, 5, 3])
    diff = se.compare(a, b)
    assert diff.rows.repeated_keys == {"a": ["k"], "b": ["k"]}
    assert diff.rows.changed == ["k"]
    assert diff.rows.changed_fields["k"] == {"x": (2, 5)}
    assert "repeated keys in a and b" in diff.summary()
    assert "repeated keys in a: ['k']" in str(diff)


def test_compare_counts_only_whole_unchanged_files_as_identical(big_shards: CachedDataset) -> None:
    saved = big_shards.drop([5, 1500]).save()
    shards = se.compare(big_shards, saved).shards
    assert shards["identical"] == []  # both parent files are still used, but not whole
    relabelled_second = big_shards.relabel({1500: "bird"}).save()
    assert se.compare(big_shards, relabelled_second).shards["identical"] == [[0, 0]]


def test_two_seed_caches_with_different_content_are_not_identical(tmp_path: Path) -> None:
    write_stable_datasets_v1_cache(tmp_path / "a", [pa.table({"x": pa.array([0, 0, 0], pa.int64())})])
    write_stable_datasets_v1_cache(tmp_path / "b", [pa.table({"x": pa.array([1, 1, 1], pa.int64())})])
    a, b = se.load(tmp_path / "a"), se.load(tmp_path / "b")
    assert a.version != b.version
    diff = se.compare(a, b)
    assert not diff.identical
    assert len(diff.rows.changed) == 3


def test_compare_survives_a_retyped_column(tmp_path: Path) -> None:
    a = se.build([{"x": 1}, {"x": 2}], NUM, name="t", home=tmp_path, progress=False)
    b = se.build([{"x": "1"}, {"x": "abc"}], Features(x=Value("string")), name="t", home=tmp_path, progress=False)
    diff = se.compare(a, b)
    assert diff.schema["columns_retyped"] == {"x": ["Value(dtype='int64')", "Value(dtype='string')"]}
    assert diff.rows.changed_fields[1] == {"x": (2, "abc")}


def test_repeated_keys_are_refused_at_build(tmp_path: Path) -> None:
    # rows are matched by key across versions, so a build refuses a repeated key (tests/test_duplicate_keys.py)
    with pytest.raises(se.DuplicateKeyError, match="rows 0 and 1 both have key 'k'"):
        se.build([("k", {"x": 1}), ("k", {"x": 2})], NUM, name="r", home=tmp_path, progress=False)


def test_label_counts_after_follow_from_the_row_diff_and_are_counted_only_when_asked(tmp_path: Path) -> None:
    features = Features(label=ClassLabel(names=["a", "b", "c"]), x=Value("int64"))
    first = se.build(
        [(f"k{i:04d}", {"label": i % 3, "x": i}) for i in range(900)], features, name="l", home=tmp_path, progress=False
    )
    edited = first.relabel({1: "c", 2: "a", 10: "b"}).drop([0, 5, 8, 600]).save(progress=False)
    other = se.build(  # rows added and removed by key, as well as changed
        [(f"k{i:04d}", {"label": (i * 7) % 3, "x": i}) for i in range(300, 1200)],
        features,
        name="l",
        home=tmp_path,
        progress=False,
    )
    for a, b in ((first, edited), (edited, first), (first, other), (edited, other)):
        diff = se.compare(a, b)
        assert diff._labels is None  # compare itself reads no whole label column
        assert diff.labels["label"]["before"] == a.label_counts("label")
        assert diff.labels["label"]["after"] == b.label_counts("label")
    assert "label: " in se.compare(first, edited).summary()  # the moves come from the row diff


def test_the_diff_and_its_json_are_what_the_typeddicts_declare(tmp_path: Path) -> None:
    from stable_explore.versioning.compare import DiffDict, LabelDiff, SchemaDiff, ShardDiff
    from stable_explore.versioning.row_diff import RowKey
    from tests.typed_json import conforms

    old = Features(label=ClassLabel(names=["cat", "dog", "owl"]), x=Value("int64"))
    new = Features(label=ClassLabel(names=["cat", "hound", "emu"]), x=Value("string"), note=Value("string"))
    boxes = Features(objects=se.Boxes(names=["cat"]))
    a = se.build([{"label": i % 3, "x": i} for i in range(6)], old, name="s", home=tmp_path, progress=False)
    b = se.build(
        [{"label": 0, "x": str(i), "note": "n"} for i in range(5)], new, name="s", home=tmp_path, progress=False
    )
    diff = se.compare(a, b)
    conforms(diff.schema, SchemaDiff, "schema")
    assert diff.schema["classes"]["label"] == {"renamed": {"dog": "hound", "owl": "emu"}}
    conforms(diff.shards, ShardDiff, "shards")
    conforms(diff.labels["label"], LabelDiff, "labels")
    conforms(diff.rows.changed + diff.rows.removed, list[RowKey], "keys")
    conforms(diff.to_dict(), DiffDict, "to_dict")
    first = se.build(
        [{"objects": [{"bbox": [0, 0, 4, 4], "category": 0}]}], boxes, name="b", home=tmp_path, progress=False
    )
    moved = first.set_boxes(0, [{"bbox": [1, 0, 4, 4], "category": 0}]).save()
    data = se.compare(first, moved).to_dict()
    conforms(data, DiffDict, "to_dict")
    assert list(data["boxes"]["objects"]) == ["0"]
    assert json.loads(json.dumps(data)) == data
