"""The ``datasets`` habits on CachedDataset mean what they mean in ``datasets``: checked against ``datasets`` itself.

Each habit runs on a real cache in tmp_path and, where ``datasets`` has the same method, on the
``datasets.Dataset`` of the same rows (``ds.to_hf(with_keys=False)``: the columns alone, without the
rows' keys), and the results are compared.
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
    hf = ds.to_hf()  # the rows' keys ride along as a last column
    assert (hf.num_rows, hf.column_names) == (ds.num_rows, [*ds.column_names, "__key__"])
    assert (hf.info.description, hf.info.license) == (info.description, info.license)


@pytest.mark.parametrize(
    ("columns", "reverse"),
    [("size", False), ("size", True), (["label", "score"], [False, True]), (["name", "size"], False)],
)
def test_sort_orders_rows_as_datasets_does(ds: se.CachedDataset, columns: Any, reverse: Any) -> None:
    hf = ds.to_hf(with_keys=False)
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
    hf = ds.to_hf(with_keys=False)
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
    hf = ds.to_hf(with_keys=False)
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
    assert view.to_hf(with_keys=False).features["label"].names == ["feline", "canine", "avian"]
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
    hf = ds.to_hf(with_keys=False).remove_columns(["image", "cube"]).with_transform(upper)
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
    hf_row = ds.to_hf(with_keys=False).with_format("torch")[0]
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


def test_with_format_torch_without_torch_names_the_extra(ds: se.CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a bare ModuleNotFoundError ("No module named 'torch'"), with no word of what to install."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails, as where it is not installed
    with pytest.raises(se.MissingDependencyError) as caught:
        ds.with_format("torch")
    assert str(caught.value) == "ds.with_format(\"torch\") needs torch: pip install 'stable-explore[torch]'"
    assert isinstance(caught.value, ImportError)
    from stable_explore.dataset._decoding import to_torch_values

    with pytest.raises(se.MissingDependencyError, match=r"pip install 'stable-explore\[torch\]'"):
        to_torch_values([1, 2])  # the decoder of a torch view made while torch was there


# -- the names datasets users type, with datasets' meaning (issue 34) -------------------------------


def test_take_is_the_first_n_rows_as_in_datasets(ds: se.CachedDataset) -> None:
    hf = ds.to_hf(with_keys=False)
    assert ds.take(5)["name"] == list(hf.take(5)["name"])
    assert ds.take(5).is_view
    assert len(ds.take(0)) == 0
    assert ds.take(1000)["name"] == ds["name"], "more rows than there are: every row (as Polars' head)"
    assert ds[10:].take(3).base_rows().tolist() == [10, 11, 12], "a view's first rows"
    assert ds.head(2)["name"] == ds["name"][:2]
    with pytest.raises(ValueError, match=r"take\(n\) needs n >= 0, got -1"):
        ds.take(-1)
    with pytest.raises(TypeError, match=r"take\(n\) needs a number of rows.*select"):
        ds.take("3")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match=r"use ds\.select\(positions\)"):
        old = ds.take([3, 1])  # type: ignore[arg-type]
    assert old["name"] == ds.select([3, 1])["name"] == [ds[3]["name"], ds[1]["name"]]
    assert ds.select(range(2, 4))["name"] == list(hf.select(range(2, 4))["name"])


def test_filter_batched_keeps_the_rows_datasets_keeps(ds: se.CachedDataset) -> None:
    hf = ds.to_hf(with_keys=False)
    sizes: list[int] = []

    def wanted(batch: dict[str, list[Any]]) -> list[bool]:
        sizes.append(len(batch["name"]))
        return [score > 1 and name < "n10" for score, name in zip(batch["score"], batch["name"], strict=True)]

    ours = ds.filter(wanted, batched=True, batch_size=7)
    assert ours.is_view
    assert sizes == [7, 7, 7, 7, 7, 5], "batches of batch_size rows"
    theirs = hf.filter(wanted, batched=True, batch_size=7)
    assert ours["name"] == list(theirs["name"])
    assert ours["score"] == list(theirs["score"])
    assert ds.filter(lambda b: np.array(b["score"]) > 2, batched=True)["score"] == [s for s in ds["score"] if s > 2]
    dogs = ds.filter(lambda b: [s > 1 for s in b["score"]], batched=True, label="dog")
    assert dogs["name"] == [r["name"] for r in ds if r["label"] == 1 and r["score"] > 1]
    assert ds[30:].filter(wanted, batched=True)["name"] == list(
        hf.select(range(30, 40)).filter(wanted, batched=True)["name"]
    )
    with pytest.raises(ValueError, match=r"returned 1 values for the batch of rows 0-9 \(10 rows\)"):
        ds.filter(lambda b: [True], batched=True, batch_size=10)
    with pytest.raises(TypeError, match="returned bool for the batch of rows 0-39; a batched filter returns one"):
        ds.filter(lambda b: True, batched=True)
    with pytest.raises(ValueError, match=r"filter does not take datasets' option\(s\) \['with_indices'\]"):
        ds.filter(lambda row, i: i < 3, with_indices=True)


def test_map_on_a_view_gives_its_rows_with_the_new_column_and_leaves_latest(ds: se.CachedDataset, home: Path) -> None:
    def double(row: dict[str, Any]) -> dict[str, Any]:
        return {"double": row["score"] * 2}

    view = ds[10:20]
    mapped = view.map(double, progress=False)
    assert len(mapped) == 10
    assert mapped["name"] == view["name"]
    assert mapped["double"] == [s * 2 for s in view["score"]]
    assert mapped["double"] == list(ds.to_hf(with_keys=False).select(range(10, 20)).map(double)["double"])
    assert mapped.column_names == [*ds.column_names, "double"]
    assert se.load("pets", home=home).version == ds.version, "map, as in datasets, leaves what load opens"
    assert repr(mapped).endswith(f", latest is pets@{ds.version})")
    assert f"latest not moved (se.load('pets') opens pets@{ds.version})" in mapped.build_info
    again = view.map(double, progress=False)
    assert (again.version, again.build_info) == (mapped.version, "reused: same function, parent version and features")
    shuffled = ds.select([39, 0, 5]).map(double, progress=False)
    assert shuffled["name"] == [ds[39]["name"], ds[0]["name"], ds[5]["name"]], "the view's order"
    whole = ds.map(double, progress=False)
    assert se.load("pets", home=home).version == ds.version
    moved = ds.map(double, progress=False, set_latest=True)
    assert moved.version == whole.version
    assert se.load("pets", home=home).version == whole.version, "set_latest=True moves it (a cache hit too)"
    assert repr(moved).endswith(", latest)")
    view_latest = ds[:3].map(double, progress=False, set_latest=True)
    assert se.load("pets", home=home).version == view_latest.version
    assert se.load("pets", home=home)["double"] == [s * 2 for s in ds["score"][:3]]


def test_num_columns_shape_and_select_columns_are_datasets(ds: se.CachedDataset) -> None:
    hf = ds.to_hf(with_keys=False)  # (the default adds the rows' keys as a column, __key__)
    assert (ds.num_columns, ds.shape) == (hf.num_columns, hf.shape) == (6, (40, 6))
    assert ds[5:9].shape == (4, 6)
    picked = ds.select_columns(["name", "label"])
    theirs = hf.select_columns(["name", "label"])
    assert picked.column_names == theirs.column_names == ["name", "label"]
    assert picked.to_list() == theirs.to_list()
    assert picked.shape == (40, 2)
    assert ds.select_columns("score").column_names == ["score"]
    assert ds.column_names == list(FEATURES), "the dataset itself is unchanged"
    with pytest.raises(KeyError, match="no column 'nope'"):
        ds.select_columns(["name", "nope"])
    with pytest.raises(se.SchemaError, match=r"\['name'\] are named more than once"):
        ds.select_columns(["name", "name"])


def test_cast_casts_every_column_as_datasets_does(ds: se.CachedDataset) -> None:
    plain = ds.select_columns(["label", "size", "score"])
    new = se.Features(
        score=se.Value("float32"), label=se.ClassLabel(names=["feline", "canine", "avian"]), size=se.Value("int64")
    )
    ours = plain.cast(new)
    theirs = plain.to_hf(with_keys=False).cast(ours.to_hf(with_keys=False).features)
    assert ours.column_names == ["score", "label", "size"]
    assert ours.features == new
    assert ours.to_list() == theirs.to_list()
    assert plain.cast(ours.to_hf(with_keys=False).features).features == new, "datasets' features are taken too"
    with pytest.raises(se.SchemaError, match=r"no feature for \['size'\]; no column \['length'\]"):
        plain.cast(se.Features(label=new["label"], length=se.Value("int64"), score=new["score"]))
    with pytest.raises(TypeError, match="cast needs features"):
        plain.cast("float")


def test_flatten_of_flat_columns_is_an_equal_dataset(ds: se.CachedDataset) -> None:
    flat = ds.flatten()
    assert flat.column_names == ds.column_names == ds.to_hf(with_keys=False).flatten().column_names
    assert flat.to_dict() == ds.to_dict()
    assert len(flat) == len(ds)
    assert ds[3:6].flatten().to_list() == ds[3:6].to_list()


def test_to_dict_and_to_list_give_datasets_values_and_image_bytes(ds: se.CachedDataset) -> None:
    hf = ds.to_hf(with_keys=False)
    ours, theirs = ds.to_dict(), hf.to_dict()
    assert list(ours) == list(theirs)
    for column in ["label", "size", "score", "name", "cube"]:
        assert ours[column] == theirs[column], column
    assert ours["image"] == [image["bytes"] for image in theirs["image"]], "an image is its encoded bytes"
    assert ours["image"] == ds.to_pandas()["image"].tolist(), "as to_pandas gives it by default"
    rows = ds[5:8].to_list()
    assert rows == [{name: ours[name][i] for name in ours} for i in range(5, 8)]
    assert ds[5:8].remove_columns("image").to_list() == hf.select(range(5, 8)).remove_columns("image").to_list()
    assert ds.to_list(batch_size=3) == ds.to_list()


def test_to_csv_and_to_json_write_the_files_datasets_writes(ds: se.CachedDataset, tmp_path: Path) -> None:
    plain = ds.remove_columns(["image", "cube"])
    theirs = plain.to_hf(with_keys=False)
    for form, suffix in (("csv", "csv"), ("json", "jsonl")):
        ours_path = getattr(plain, f"to_{form}")(tmp_path / f"ours.{suffix}")
        assert ours_path == tmp_path / f"ours.{suffix}"
        getattr(theirs, f"to_{form}")(str(tmp_path / f"theirs.{suffix}"))
        assert ours_path.read_bytes() == (tmp_path / f"theirs.{suffix}").read_bytes(), form
    assert plain[38:].to_json(tmp_path / "two.jsonl").read_text().count("\n") == 2
    cubes = ds.select_columns(["cube"])[:2]
    assert (
        cubes.to_csv(tmp_path / "cubes.csv").read_text()
        == 'cube\n"[[[0], [0]], [[0], [0]]]"\n"[[[1], [1]], [[1], [1]]]"\n'
    )
    assert cubes.to_json(tmp_path / "cubes.jsonl").read_text().splitlines()[1] == '{"cube":[[[1],[1]],[[1],[1]]]}'
    with pytest.raises(se.SchemaError, match=r"to_csv cannot write column\(s\) \['image'\].*remove_columns"):
        ds.to_csv(tmp_path / "images.csv")
    assert not (tmp_path / "images.csv").exists()


def test_to_csv_leaves_the_old_file_when_a_row_fails(ds: se.CachedDataset, tmp_path: Path) -> None:
    target = tmp_path / "rows.csv"
    target.write_text("old\n")
    broken = ds.select_columns(["size", "name"]).cast_column("name", se.Value("int64"))  # fails when read
    with pytest.raises(se.SchemaError, match="field 'name'"):
        broken.to_csv(target, batch_size=5)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == ["rows.csv"], "no temporary file is left"
    (tmp_path / "out").mkdir()
    with pytest.raises(se.ExportTargetError, match="it is a folder"):
        ds.select_columns("name").to_csv(tmp_path / "out")
    with pytest.raises(se.ExportTargetError, match="it holds the catalog home"):  # tmp_path holds the home
        ds.select_columns("name").to_csv(tmp_path)
    with pytest.raises(se.ExportTargetError, match="inside the catalog home"):
        ds.select_columns("name").to_json(ds.cache_dir / "rows.jsonl")


def test_concatenate_datasets_keeps_rows_and_keys_as_datasets_does(ds: se.CachedDataset, home: Path) -> None:
    first, last = ds[:10], ds[30:]
    both = se.concatenate_datasets([first, last], progress=False)
    theirs = datasets.concatenate_datasets(
        [ds.to_hf(with_keys=False).select(range(10)), ds.to_hf(with_keys=False).select(range(30, 40))]
    )
    assert both.remove_columns("image").to_list() == theirs.remove_columns("image").to_list()
    assert both.with_format("python")["image"] == [image["bytes"] for image in theirs.to_dict()["image"]], (
        "images byte for byte"
    )
    assert both.features == ds.features
    assert both.keys() == first.keys() + last.keys() == [*range(10), *range(30, 40)], "keys kept"
    assert both.name == "pets-concatenated"
    assert se.load("pets", home=home).version == ds.version, "no input's latest moves"
    again = se.concatenate_datasets([first, last], progress=False)
    assert again.version == both.version
    assert again.build_info.startswith("reused")
    twice = se.concatenate_datasets([ds, ds], name="twice", progress=False)
    assert twice.keys() == list(range(80)), "running-index keys stay a running index"
    assert twice["name"] == ds["name"] * 2


def test_concatenate_datasets_names_a_repeated_key_and_a_differing_column(ds: se.CachedDataset, home: Path) -> None:
    keyed = se.build(
        [(f"k{i}", {"x": i}) for i in range(5)], se.Features(x=se.Value("int64")), name="k", home=home, progress=False
    )
    with pytest.raises(se.DuplicateKeyError, match="both have key 'k3'") as caught:
        se.concatenate_datasets([keyed, keyed[3:]], progress=False)
    note = caught.value.__notes__[-1]
    assert f"row 3 of dataset 0 ({keyed.ref}) and of row 0 of dataset 1" in note
    assert "keys='prefix'" in note
    assert not (home / "k-concatenated").exists() or not any((home / "k-concatenated" / "versions").glob("[!.]*"))
    prefixed = se.concatenate_datasets([keyed, keyed[3:]], keys="prefix", progress=False)
    assert prefixed.keys() == ["0/k0", "0/k1", "0/k2", "0/k3", "0/k4", "1/k3", "1/k4"]
    assert prefixed["x"] == [0, 1, 2, 3, 4, 3, 4]
    numbered = se.concatenate_datasets([keyed, keyed], keys="index", progress=False)
    assert numbered.keys() == list(range(10))
    other = ds.cast_column("label", se.ClassLabel(names=["a", "b", "c"]))
    with pytest.raises(se.SchemaError, match=r"column 'label' is ClassLabel\(names=\['cat'.*in dataset 1"):
        se.concatenate_datasets([ds, other], progress=False)
    with pytest.raises(se.SchemaError, match=r"column 'cube' is in dataset 0 .* but not in dataset 1"):
        se.concatenate_datasets([ds, ds.remove_columns("cube")], progress=False)
    with pytest.raises(TypeError, match="a list of one or more datasets"):
        se.concatenate_datasets([], progress=False)
    with pytest.raises(ValueError, match="keys must be one of"):
        se.concatenate_datasets([keyed], keys="drop", progress=False)
    with pytest.raises(ValueError, match=r"axis=1.*ds\.add_columns"):
        se.concatenate_datasets([keyed, keyed], axis=1, progress=False)
