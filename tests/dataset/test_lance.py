"""se -> Lance -> se: ds.to_lance, then se.load / se.from_lance, compared row by row and field by field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import Array3D, CachedDataset, ClassLabel, Features, Image, Sequence, Value
from tests.conftest import NAMES

lance = pytest.importorskip("lance", reason="the lance extra: pip install 'stable-explore[lance]'")


def _rich(home: Path, jpegs: list[bytes]) -> CachedDataset:
    features = Features(
        image=Image(),
        label=ClassLabel(names=NAMES),
        score=Value("float32"),
        name=Value("string"),
        tags=Sequence(Value("int32")),
        patch=Array3D(shape=(2, 2, 3), dtype="uint8"),
    )
    rows = (
        (
            f"k{i:03d}",
            {
                "image": jpegs[i],
                "label": NAMES[i % 3],
                "score": i / 8,
                "name": f"ü-{i}",
                "tags": list(range(i % 4)),
                "patch": np.full((2, 2, 3), i, np.uint8),
            },
        )
        for i in range(50)
    )
    return se.build(rows, features, name="rich", home=home, progress=False, shard_size="4KB", batch_size=8)


def _assert_same_rows(back: CachedDataset, ds: CachedDataset) -> None:
    assert len(back) == len(ds)
    ours, theirs = ds.to_arrow(), back.to_arrow()
    for name in ds.features:
        for i in range(len(ds)):
            assert theirs.column(name)[i].as_py() == ours.column(name)[i].as_py(), f"row {i}, field {name!r}"


def test_se_to_lance_to_se_row_by_row(home: Path, tmp_path: Path, jpegs: list[bytes]) -> None:
    ds = _rich(home, jpegs)
    assert ds.num_shards > 1
    out = ds.to_lance(tmp_path / "rich.lance")

    back = se.load(out, home=home)

    assert back.features == ds.features  # class names, shapes, dtypes
    _assert_same_rows(back, ds)
    assert back.label_counts() == ds.label_counts()
    np.testing.assert_array_equal(back[7]["patch"], ds[7]["patch"])
    table = lance.dataset(str(out)).to_table()
    assert table.column("__key__").to_pylist() == ds.keys()
    assert table.column("image").to_pylist() == jpegs[:50]  # bytes as stored: no re-encode
    # docs/format.md (Lance): se.load opens the read-only mirror, keyed by position
    assert back.keys() == list(range(50))
    assert "__key__" not in back.features


def test_from_lance_keeps_the_keys_and_builds_the_same_version(home: Path, tmp_path: Path, jpegs: list[bytes]) -> None:
    ds = _rich(home, jpegs)
    out = ds.to_lance(tmp_path / "rich.lance")
    copy = tmp_path / "other-home"
    back = se.from_lance(out, home=copy, progress=False)
    assert (back.name, back.home) == ("rich", copy), "name= defaults to the folder's; home= is where it is built"
    assert back.keys() == ds.keys()
    assert "__key__" not in back.features
    assert back.features == ds.features
    assert back.version == ds.version
    assert se.compare(ds, back).identical
    assert se.from_lance(out, home=copy, progress=False).build_info.startswith("reused")
    plain = se.from_lance(ds[:3].to_lance(tmp_path / "plain.lance", with_keys=False), home=copy, progress=False)
    assert "__key__" not in lance.dataset(str(tmp_path / "plain.lance")).schema.names
    assert plain.keys() == [0, 1, 2]
    with pytest.raises(se.NotACacheError, match="from_lance reads a Lance dataset"):
        se.from_lance(ds.cache_dir, home=copy)


def test_a_view_goes_out_as_its_rows(home: Path, tmp_path: Path, jpegs: list[bytes]) -> None:
    ds = _rich(home, jpegs)
    view = ds.filter(label="dog")[::2]
    back = se.load(view.to_lance(tmp_path / "dogs.lance"), home=home)
    _assert_same_rows(back, view)
    assert {name for name, count in back.label_counts().items() if count} == {"dog"}
    assert lance.dataset(str(tmp_path / "dogs.lance")).to_table().column("__key__").to_pylist() == view.keys()


def test_create_refuses_an_existing_dataset_and_overwrite_replaces_it(home: Path, tmp_path: Path) -> None:
    ds = se.build([{"x": i} for i in range(4)], Features(x=Value("int64")), name="n", home=home, progress=False)
    out = ds.to_lance(tmp_path / "n.lance")
    with pytest.raises(se.InvalidOptionError, match="mode='overwrite'"):
        ds.to_lance(out)
    ds[:2].to_lance(out, mode="overwrite")
    assert [row["x"] for row in se.load(out, home=home)] == [0, 1]


def test_export_layout_lance_is_to_lance(home: Path, tmp_path: Path) -> None:
    ds = se.build([{"x": i} for i in range(3)], Features(x=Value("int64")), name="n", home=home, progress=False)
    out = se.export("n", tmp_path / "n.lance", layout="lance", home=home)
    assert lance.dataset(str(out)).to_table().column("x").to_pylist() == [0, 1, 2]
    with pytest.raises(se.InvalidOptionError, match="layout must be one of"):
        ds.export(tmp_path / "x", layout="tfrecord")


def test_a_list_of_dicts_goes_through_lance_as_the_same_version(home: Path, tmp_path: Path) -> None:
    item = Sequence({"bbox": Sequence(Value("float32"), length=4), "category": ClassLabel(names=NAMES)})
    rows = [(f"img-{i}", {"objects": [{"bbox": [0, 0, i, i], "category": NAMES[i % 3]}] * (i % 3)}) for i in range(6)]
    ds = se.build(rows, Features(objects=item), name="boxes", home=home, progress=False)
    back = se.from_lance(ds.to_lance(tmp_path / "boxes.lance"), name="copy", home=home, progress=False)
    assert back.features == ds.features
    assert back.version == ds.version
    assert back["objects"] == ds["objects"]
