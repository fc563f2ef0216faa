"""Issue 12 #11 and #5 (second half): no raw builtin errors; hand edits of metadata are caught when it is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import (
    Array3D,
    CacheCorruptionError,
    ClassLabel,
    EncodingError,
    Features,
    InvalidOptionError,
    SchemaError,
    Value,
)
from stable_explore.cache import write_sharded_arrow_cache
from tests.conftest import write_stable_datasets_v1_cache
from tests.reliability.trials import edit_metadata

F = Features(x=Value("int64"))


@pytest.mark.parametrize("key", [2**63, 2**64, -(2**63) - 1, np.uint64(2**63)])
def test_int_keys_outside_int64_name_the_row(tmp_path: Path, key: object) -> None:
    rows = [(1, {"x": 1}), (key, {"x": 2})]
    with pytest.raises(EncodingError, match=rf"row 1, key (np.uint64\()?{int(key)}\)?: int keys must fit in int64"):
        se.build(rows, F, name="k", home=tmp_path, progress=False)
    with pytest.raises(EncodingError, match=r"row 0, .*int keys must fit in int64"):
        se.build([(key, {"x": 2})], F, name="k", home=tmp_path, progress=False)


def test_lone_surrogates_in_keys_name_the_row(tmp_path: Path) -> None:
    with pytest.raises(EncodingError, match=r"row 1, key 'b\\udc80': the key cannot be stored as UTF-8"):
        se.build([("a", {"x": 1}), ("b\udc80", {"x": 2})], F, name="k", home=tmp_path, progress=False)


@pytest.mark.parametrize("option", ["description", "license", "metadata"])
def test_lone_surrogates_in_descriptive_text_name_the_option(tmp_path: Path, option: str) -> None:
    value = {"note": "\ud800"} if option == "metadata" else "bad \ud800"
    with pytest.raises(InvalidOptionError, match=rf"{option} cannot be stored as UTF-8 .*lone surrogate"):
        se.build([{"x": 1}], F, name="k", home=tmp_path, progress=False, **{option: value})
    assert not (tmp_path / "k" / "versions").is_dir() or not any((tmp_path / "k" / "versions").iterdir())


def test_lone_surrogates_in_an_edit_message_are_refused_before_publishing(tmp_path: Path) -> None:
    ds = se.build([{"x": i} for i in range(3)], F, name="k", home=tmp_path, progress=False)
    with pytest.raises(InvalidOptionError, match="message cannot be stored as UTF-8"):
        ds.drop([0]).save(message="oops \udfff")
    assert [v.name for v in (tmp_path / "k" / "versions").iterdir()] == [ds.version]


def test_lone_surrogates_in_class_and_column_names_are_schema_errors() -> None:
    with pytest.raises(SchemaError, match=r"ClassLabel name 1 \('b\\ud800'\) cannot be stored as UTF-8"):
        ClassLabel(names=["a", "b\ud800"])
    with pytest.raises(SchemaError, match=r"column name .* cannot be stored as UTF-8"):
        Features({"col\ud800": Value("int64")})


def test_features_setitem_update_and_or_check_like_init() -> None:
    features = Features(x=Value("int64"))
    with pytest.raises(SchemaError, match="reserved"):
        features["__key__"] = Value("int64")
    with pytest.raises(SchemaError, match="must be a feature type"):
        features["y"] = "int64"  # type: ignore[assignment]
    with pytest.raises(SchemaError, match="non-empty strings"):
        features.update({"": Value("int64")})
    with pytest.raises(SchemaError, match="must be a feature type"):
        features.update(y=3)
    with pytest.raises(SchemaError, match="must be a feature type"):
        features.setdefault("z", None)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="must be a feature type"):
        features |= {"w": "x"}
    with pytest.raises(SchemaError, match="must be a feature type"):
        _ = features | {"w": "x"}
    assert list(features) == ["x"]


def test_array3d_refuses_bool_and_huge_dimensions() -> None:
    with pytest.raises(SchemaError, match="three positive ints"):
        Array3D(shape=(True, 2, 2))
    with pytest.raises(SchemaError, match="three positive ints"):
        Array3D(shape=(2**70, 1, 1))


def _build_arrays(home: Path) -> se.CachedDataset:
    rows = [{"a": np.full((2, 2, 2), i, dtype=np.float32), "label": i % 2, "x": i} for i in range(4)]
    features = Features(a=Array3D(shape=(2, 2, 2)), label=ClassLabel(names=["cat", "dog"]), x=Value("int64"))
    return se.build(rows, features, name="arr", home=home, progress=False, description="four arrays")


EDITS = {
    "Array3D shape": lambda raw: raw["features"]["a"].update(shape=[2, 2, 3]),
    "Array3D shape of bools": lambda raw: raw["features"]["a"].update(shape=[True, 2, 4]),
    "Array3D shape not a list": lambda raw: raw["features"]["a"].update(shape=8),
    "class names": lambda raw: raw["features"]["label"].update(names=["dog", "cat"]),
    "dtype": lambda raw: raw["features"]["x"].update(dtype="int32"),
    "description": lambda raw: raw.update(description="forged"),
    "row segments": lambda raw: raw.update(cache_format_version=2, row_segments=[[0, 1, 3]], num_rows=3),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_hand_edited_metadata_is_caught_when_loaded(tmp_path: Path, what: str) -> None:
    ds = _build_arrays(tmp_path)
    edit_metadata(ds.cache_dir, EDITS[what])
    caught = r"_metadata\.json: .*(does not match its own|not a valid schema|version id .* does not match the content)"
    with pytest.raises(CacheCorruptionError, match=caught):
        se.load("arr", home=tmp_path)


@pytest.mark.parametrize("what", ["class names", "dtype", "description", "Array3D shape"])
def test_without_the_metadata_digest_the_version_id_still_catches_edits(tmp_path: Path, what: str) -> None:
    ds = _build_arrays(tmp_path)
    edit_metadata(ds.cache_dir, EDITS[what], keep_digest=False)  # as a revision-1 cache
    with pytest.raises(CacheCorruptionError, match=r"version id .* does not match the content and labels"):
        se.load("arr", home=tmp_path)


def test_an_edited_array3d_shape_in_a_cache_without_ids_names_the_row(tmp_path: Path) -> None:
    out = tmp_path / "c"
    write_sharded_arrow_cache(({"a": np.zeros((2, 2, 2), dtype=np.float32)} for _ in range(2)),
                                       Features(a=Array3D(shape=(2, 2, 2))), out)  # fmt: skip
    edit_metadata(out, EDITS["Array3D shape"], keep_digest=False)
    with pytest.raises(CacheCorruptionError, match=r"row 0 .*field 'a'.*cannot reshape"):
        se.load(out)[0]


def test_non_utf8_pandas_metadata_in_a_shard_names_the_file(tmp_path: Path) -> None:
    table = pa.table({"x": [1, 2]}).replace_schema_metadata({b"pandas": b"\xff\xfe{not json"})
    out = tmp_path / "seed"
    write_stable_datasets_v1_cache(out, [table])
    ds = se.load(out, features=F)
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow: .*pandas"):
        ds.to_pandas()


def test_non_utf8_features_metadata_in_a_shard_names_the_file(tmp_path: Path) -> None:
    table = pa.table({"x": [1, 2]}).replace_schema_metadata({b"stable_explore.features": b"\xff\xfe"})
    out = tmp_path / "seed"
    write_stable_datasets_v1_cache(out, [table])
    with pytest.raises(CacheCorruptionError, match=r"shard-00000\.arrow: "):
        se.load(out)[0]


def test_metadata_with_lone_surrogates_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "c"
    write_sharded_arrow_cache([{"x": 1}], F, out)
    path = out / "_metadata.json"
    raw = json.loads(path.read_text())
    raw["description"] = "\ud800"
    raw.pop("metadata_digest")
    path.write_text(json.dumps(raw))  # json escapes it as \\ud800: valid JSON, invalid text
    with pytest.raises(CacheCorruptionError, match=r"_metadata\.json: description cannot be stored as UTF-8"):
        se.load(out)
