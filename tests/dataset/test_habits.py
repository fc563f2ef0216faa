"""The ``datasets`` habits on CachedDataset mean what they mean in ``datasets``: checked against ``datasets`` itself.

Each habit runs on a real cache in tmp_path and, where ``datasets`` has the same method, on the
``datasets.Dataset`` of the same rows (``ds.to_hf()``), and the results are compared.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stable_explore as se

datasets = pytest.importorskip("datasets", reason="datasets is in the test extra")

NAMES = ["cat", "dog", "bird"]
FEATURES = se.Features(
    image=se.Image(),
    label=se.ClassLabel(names=NAMES),
    size=se.Value("int32"),
    score=se.Value("float64"),
    name=se.Value("string"),
    cube=se.Array3D(shape=(2, 2, 1), dtype="uint8"),
)


@pytest.fixture
def ds(home: Path, jpegs: list[bytes]) -> se.CachedDataset:
    rows = [
        {
            "image": jpegs[i % len(jpegs)],
            "label": NAMES[(i * 7) % 3],
            "size": (i * 37) % 11 if i % 9 else None,
            "score": float((i * 13) % 5),
            "name": f"n{(i * 5) % 17:02d}",
            "cube": np.full((2, 2, 1), i, dtype=np.uint8),
        }
        for i in range(40)
    ]
    return se.build(rows, FEATURES, name="pets", home=home, description="forty pets", license="CC0", progress=False)


def test_num_rows_column_names_and_info(ds: se.CachedDataset) -> None:
    assert ds.num_rows == 40
    assert ds[5:9].num_rows == 4
    assert ds.column_names == ["image", "label", "size", "score", "name", "cube"]
    info = ds.info
    assert (info.description, info.license, info.dataset_name, info.version) == (
        "forty pets",
        "CC0",
        "pets",
        ds.version,
    )
    assert info.features == FEATURES
    hf = ds.to_hf()
    assert (hf.num_rows, hf.column_names) == (ds.num_rows, [*ds.column_names, "__key__"])
    assert (hf.info.description, hf.info.license) == (info.description, info.license)


@pytest.mark.parametrize(
    ("columns", "reverse"),
    [("size", False), ("size", True), (["label", "score"], [False, True]), (["name", "size"], False)],
)
def test_sort_orders_rows_as_datasets_does(ds: se.CachedDataset, columns: Any, reverse: Any) -> None:
    hf = ds.to_hf()
    ours = ds.sort(columns, reverse=reverse)
    theirs = hf.sort(columns, reverse=reverse)
    assert ours.is_view
    for column in ["label", "size", "score", "name"]:
        assert ours[column] == list(theirs[column]), column
    assert ds.sort("size", null_placement="at_start")["size"][:5] == [None] * 5
    view = ds[10:30].sort("name")
    assert view["name"] == sorted(ds[10:30]["name"])


def test_sort_and_unique_read_no_image(ds: se.CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an image was decoded")

    monkeypatch.setattr(se.Image, "decode_value", refuse)
    assert len(ds.sort("score")) == 40
    assert sorted(ds.unique("score")) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_unique_is_datasets_unique(ds: se.CachedDataset) -> None:
    hf = ds.to_hf()
    for column in ["label", "size", "score", "name"]:
        assert ds.unique(column) == hf.unique(column), column
    assert ds[:3].unique("label") == [0, 1, 2]
    with pytest.raises(KeyError, match="no column 'nope'"):
        ds.unique("nope")


@pytest.mark.parametrize(
    ("test_size", "train_size", "seed"), [(0.25, None, 1), (7, None, 2), (None, 0.5, 3), (0.2, 0.3, 4), (None, None, 5)]
)
def test_train_test_split_draws_the_rows_datasets_draws(
    ds: se.CachedDataset, test_size: Any, train_size: Any, seed: int
) -> None:
    hf = ds.to_hf()
    ours = ds.train_test_split(test_size=test_size, train_size=train_size, seed=seed)
    theirs = hf.train_test_split(test_size=test_size, train_size=train_size, seed=seed)
    for part in ("train", "test"):
        assert ours[part].is_view
        assert ours[part]["name"] == list(theirs[part]["name"]), part
        assert ours[part]["size"] == list(theirs[part]["size"]), part
    assert not set(ours["train"].base_rows()) & set(ours["test"].base_rows())
    in_order = ds.train_test_split(test_size=10, shuffle=False)
    assert in_order["train"].base_rows().tolist() == list(range(30))
    assert in_order["test"].base_rows().tolist() == list(range(30, 40))
    assert ds[20:].train_test_split(test_size=5, shuffle=False)["test"].base_rows().tolist() == list(range(35, 40))


def test_train_test_split_refuses_sizes_that_do_not_fit(ds: se.CachedDataset) -> None:
    with pytest.raises(ValueError, match=r"test_size=40 must be a fraction in \(0, 1\) or a number of rows"):
        ds.train_test_split(test_size=40)
    with pytest.raises(ValueError, match="exceed the 40 rows"):
        ds.train_test_split(test_size=30, train_size=20)
    with pytest.raises(ValueError, match="test_size must be a fraction"):
        ds.train_test_split(test_size="half")  # type: ignore[arg-type]


def test_remove_rename_and_cast_columns_are_views_every_read_path_sees(ds: se.CachedDataset, tmp_path: Path) -> None:
    view = (
        ds.remove_columns(["image", "cube"])
        .rename_column("size", "length")
        .cast_column("length", se.Value("float64"))
        .cast_column("label", se.ClassLabel(names=["feline", "canine", "avian"]))
    )
    assert view.column_names == ["label", "length", "score", "name"]
    assert ds.column_names == list(FEATURES), "the dataset itself is unchanged"
    sizes = [None if s is None else float(s) for s in ds["size"]]
    assert view["length"] == sizes
    assert view[3] == {"label": ds[3]["label"], "length": sizes[3], "score": ds[3]["score"], "name": ds[3]["name"]}
    assert view.label_counts() == dict(zip(["feline", "canine", "avian"], ds.label_counts().values(), strict=True))
    assert view.filter(label="canine")["name"] == ds.filter(label="dog")["name"]
    assert view.to_pandas()["label"].cat.categories.tolist() == ["feline", "canine", "avian"]
    assert view.to_arrow().column_names == ["label", "length", "score", "name"]
    assert view.sort("length")["length"][-1] is None
    assert view.to_hf().features["label"].names == ["feline", "canine", "avian"]
    again = pickle.loads(pickle.dumps(view[5:10]))  # a DataLoader worker's copy
    assert again.column_names == view.column_names
    assert again[0] == view[5]
    renamed = ds.rename_columns({"name": "title", "score": "points"})
    assert renamed.column_names == ["image", "label", "size", "points", "title", "cube"]
    assert renamed.cast_column("label", datasets.Value("int64")).features["label"] == se.Value("int64")


def test_column_views_say_what_is_wrong(ds: se.CachedDataset) -> None:
    with pytest.raises(KeyError, match=r"no column 'nope'; columns are \['image'"):
        ds.remove_columns("nope")
    with pytest.raises(se.SchemaError, match="a column 'name' exists already"):
        ds.rename_column("size", "name")
    with pytest.raises(se.SchemaError, match="reserved"):
        ds.rename_column("size", "__key__")
    with pytest.raises(se.SchemaError, match=r"column 'image' holds large_binary values, which cannot be cast"):
        ds.cast_column("image", se.Sequence(se.Value("int64")))
    with pytest.raises(se.SchemaError, match=r"column 'name' is Value.*not encoded Image values.*se\.build"):
        ds.cast_column("name", se.Image())
    narrow = ds.cast_column("size", se.Value("int8")).cast_column("name", se.Value("int64"))
    with pytest.raises(se.SchemaError, match="field 'name': a stored value cannot be cast"):
        narrow[0]
    view = ds.remove_columns("cube")
    with pytest.raises(se.SchemaError, match="drop works on the stored columns"):
        view.drop([0])
    with pytest.raises(se.SchemaError, match=r"save works on the stored columns.*se\.build"):
        view.save(message="fewer columns")
    assert len(ds.select([0, 1]).drop([0])) == 1, "a plain view still edits"


def test_with_transform_applies_on_access(ds: se.CachedDataset) -> None:
    calls: list[int] = []

    def upper(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        calls.append(len(batch["name"]))
        return {"name": [n.upper() for n in batch["name"]], "half": [s / 2 for s in batch["score"]]}

    view = ds.remove_columns(["image", "cube"]).with_transform(upper)
    assert calls == [], "nothing is computed ahead"
    assert view[3] == {"name": ds[3]["name"].upper(), "half": ds[3]["score"] / 2}
    assert view.__getitems__([0, 1]) == [{"name": ds[i]["name"].upper(), "half": ds[i]["score"] / 2} for i in (0, 1)]
    batch = next(view.iter(batch_size=8))
    assert batch == {"name": [n.upper() for n in ds["name"][:8]], "half": [s / 2 for s in ds["score"][:8]]}
    assert [row["name"] for row in view] == [n.upper() for n in ds["name"]]
    assert view[10:12][0]["name"] == ds[10]["name"].upper(), "views keep the transform"
    assert view.to_pandas()["name"].tolist() == ds["name"], "exports are of the data, as in datasets"
    assert view.with_transform(None)[3] == {k: v for k, v in ds[3].items() if k not in ("image", "cube")}
    assert pickle.loads(pickle.dumps(ds.with_transform(_module_transform)))[2] == {"double": [ds[2]["score"] * 2]}
    hf = ds.to_hf().remove_columns(["image", "cube"]).with_transform(upper)
    assert hf[3] == view[3]


def _module_transform(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {"double": [[s * 2] for s in batch["score"]]}


def test_with_format_torch_gives_tensors_and_a_dataloader_collates_without_warnings(ds: se.CachedDataset) -> None:
    torch = pytest.importorskip("torch", reason="CI installs torch==2.13.0 (a local CPU build)")
    tensors = ds.with_format("torch")
    row = tensors[0]
    assert isinstance(row["image"], torch.Tensor)
    assert row["image"].dtype == torch.uint8
    assert tuple(row["image"].shape) == (3, 16, 16), "channels first, as datasets gives them"
    assert row["label"].item() == ds[0]["label"]
    assert row["cube"].shape == (2, 2, 1)
    assert row["cube"].dtype == torch.int64, "integer arrays as int64, as datasets gives them"
    assert row["name"] == ds[0]["name"]
    batch = next(tensors.remove_columns("size").iter(batch_size=4))  # size has nulls: not a tensor column
    assert batch["image"].shape == (4, 3, 16, 16)
    assert batch["label"].tolist() == ds["label"][:4]
    hf_row = ds.to_hf().with_format("torch")[0]
    assert torch.equal(hf_row["image"], row["image"])
    assert torch.equal(hf_row["label"], row["label"])
    assert torch.equal(hf_row["cube"], row["cube"])
    assert torch.equal(hf_row["score"], row["score"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns on a read-only array; none may reach it
        loader = torch.utils.data.DataLoader(ds.remove_columns(["size", "name"]).with_format("numpy"), batch_size=8)
        first = next(iter(loader))
        assert first["image"].shape == (8, 16, 16, 3)
        assert first["cube"].shape == (8, 2, 2, 1)
        array = ds.with_format("numpy")[1]["image"]
        assert array.flags.writeable
        torch.from_numpy(array)
        torch.from_numpy(ds[1]["cube"])
    assert np.array_equal(ds.with_format("numpy")[1]["cube"], np.full((2, 2, 1), 1, dtype=np.uint8))


def test_a_build_from_a_column_view_or_transform_is_no_cache_hit_of_another(ds: se.CachedDataset, home: Path) -> None:
    def rows(source: se.CachedDataset) -> Any:
        yield from source

    plain = ds.remove_columns(["image", "cube"])
    features = plain.features
    first = se.build(rows, features, name="copy", args=(plain,), home=home, progress=False)
    renamed = plain.rename_column("name", "title").rename_column("title", "name")  # other columns, same names
    assert se.build(rows, features, name="copy", args=(renamed,), home=home, progress=False).version == first.version
    louder = plain.with_transform(lambda b: {**b, "name": [n.upper() for n in b["name"]]})
    second = se.build(rows, features, name="copy", args=(louder,), home=home, progress=False)
    assert not second.build_info.startswith("reused"), "a transform is part of what the rows are"
    assert second["name"] == [n.upper() for n in ds["name"]]
