"""Round trips with Hugging Face ``datasets``, Parquet and pandas: every row compared field by field.

Images are compared byte for byte (no direction promises a re-encode), arrays by value and dtype,
labels by index and by name. Each direction builds from real files (shards in tmp_path, Parquet
files, ``datasets``' own Arrow tables), never from mocks.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.schema.huggingface import HF_SCHEMA_KEY, features_from_hf

datasets = pytest.importorskip("datasets", reason="datasets is in the test extra")

NAMES = ["cat", "dog", "bird"]
N = 57  # rows: an odd count, so shards of 10 and splits come out uneven


def _png(seed: int) -> bytes:
    array = np.random.default_rng(seed).integers(0, 255, (6 + seed % 3, 5, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def _jpeg(seed: int) -> bytes:
    array = np.random.default_rng(seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(array).save(buffer, format="JPEG", quality=87)
    return buffer.getvalue()


FEATURES = se.Features(
    image=se.Image(),
    label=se.ClassLabel(names=NAMES),
    array=se.Array3D(shape=(2, 3, 2), dtype="float32"),
    tags=se.Sequence(se.Value("string")),
    pair=se.Sequence(se.Value("int16"), length=2),
    crops=se.Sequence(se.Image()),
    score=se.Value("float64"),
    note=se.Value("string"),
)


def _rows(n: int = N) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        rows.append(
            {
                "image": _jpeg(i) if i % 2 else _png(i),
                "label": NAMES[i % 3] if i % 11 else None,
                "array": np.arange(12, dtype=np.float32).reshape(2, 3, 2) * i if i % 7 else None,
                "tags": [f"t{j}" for j in range(i % 4)],
                "pair": [i, -i],
                "crops": [_png(i + 100)] * (i % 3),
                "score": i / 3,
                "note": None if i % 5 == 0 else f"row {i}",
            }
        )
    return rows


def _label_index(value: Any) -> int | None:
    return None if value is None else NAMES.index(value) if isinstance(value, str) else int(value)


def _compare(expected: list[dict[str, Any]], got: list[dict[str, Any]], where: str) -> int:
    """Every field of every row equal (images byte for byte, arrays by value): the number of fields compared."""
    assert len(got) == len(expected), f"{where}: {len(got)} rows, expected {len(expected)}"
    compared = 0
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert set(have) == set(want), f"{where} row {index}: fields {sorted(have)}, expected {sorted(want)}"
        for field, value in want.items():
            seen = have[field]
            place = f"{where} row {index} field {field!r}"
            if field == "label":
                assert _label_index(seen) == _label_index(value), place
            elif field == "array":
                if value is None:
                    assert seen is None, place
                else:
                    seen_array = np.asarray(seen, dtype=np.float32)
                    assert seen_array.shape == (2, 3, 2), place
                    assert np.array_equal(seen_array, value), place
            elif field in ("image", "crops"):
                assert _image_bytes(seen) == value, place
            elif field == "pair":
                assert [int(v) for v in seen] == value, place
            else:
                assert seen == value, place
            compared += 1
    return compared


def _image_bytes(value: Any) -> Any:
    """Encoded image bytes from bytes, a ``datasets`` image dict, or a list of those."""
    if isinstance(value, list):
        return [_image_bytes(v) for v in value]
    if isinstance(value, dict):
        return value["bytes"]
    return value


def _hf_rows(hf: Any) -> list[dict[str, Any]]:
    """A ``datasets.Dataset``'s feature columns, rows with images undecoded (the stored bytes); no ``__key__``."""
    if "__key__" in hf.column_names:
        hf = hf.remove_columns("__key__")
    undecoded = hf.cast_column("image", datasets.Image(decode=False)).cast_column(
        "crops", datasets.List(datasets.Image(decode=False))
    )
    return [dict(row) for row in undecoded]


@pytest.fixture
def ours(home: Path) -> se.CachedDataset:
    return se.build(_rows(), FEATURES, name="mixed", home=home, progress=False, batch_size=10, shard_size=1)


def test_se_to_hf_keeps_every_field_label_names_and_image_bytes(ours: se.CachedDataset) -> None:
    hf = ours.to_hf()
    assert isinstance(hf, datasets.Dataset)
    assert hf.num_rows == N
    assert hf.features["label"] == datasets.ClassLabel(names=NAMES)
    assert isinstance(hf.features["image"], datasets.Image)
    assert hf.features["array"] == datasets.Array3D(shape=(2, 3, 2), dtype="float32")
    assert hf.features["crops"] == datasets.List(datasets.Image())
    assert hf.features["pair"] == datasets.List(datasets.Value("int16"), length=2)
    assert hf.info.dataset_name == "mixed"
    assert hf.column_names[-1] == "__key__", "each row's key, in a last column"
    assert hf["__key__"] == ours.keys()
    assert _compare(_rows(), _hf_rows(hf), "se -> HF") == N * len(FEATURES)
    decoded = hf[3]["image"]  # datasets decodes our bytes itself
    assert decoded.size == (8, 8)
    assert decoded.format == "JPEG"
    assert hf.with_format("numpy")[1]["array"].shape == (2, 3, 2)


def test_to_hf_of_a_view_has_the_views_rows(ours: se.CachedDataset) -> None:
    view = ours.shuffle(seed=3)[:20]
    hf = view.to_hf()
    expected = [_rows()[i] for i in view.base_rows()]
    assert _compare(expected, _hf_rows(hf), "view -> HF") == 20 * len(FEATURES)
    assert hf["__key__"] == view.keys()


def test_hf_to_se_to_hf(home: Path) -> None:
    rows = _rows()
    hf_features = datasets.Features.from_dict(
        {
            "image": {"_type": "Image"},
            "label": {"_type": "ClassLabel", "names": NAMES},
            "array": {"_type": "Array3D", "shape": [2, 3, 2], "dtype": "float32"},
            "tags": {"_type": "List", "feature": {"_type": "Value", "dtype": "string"}},
            "pair": {"_type": "List", "feature": {"_type": "Value", "dtype": "int16"}, "length": 2},
            "crops": {"_type": "List", "feature": {"_type": "Image"}},
            "score": {"_type": "Value", "dtype": "float64"},
            "note": {"_type": "Value", "dtype": "string"},
        }
    )
    source = [
        {
            **row,
            "label": _label_index(row["label"]),
            "image": {"bytes": row["image"], "path": None},
            "crops": [{"bytes": c, "path": None} for c in row["crops"]],
        }
        for row in rows
    ]
    hf = datasets.Dataset.from_list(source, features=hf_features)
    ds = se.from_hf(hf, name="from-hf", home=home, progress=False)
    assert ds.features == FEATURES
    assert _compare(rows, list(ds.with_format("python")), "HF -> se") == N * len(FEATURES)
    again = ds.to_hf()
    assert again.features == datasets.Features({**hf_features, "__key__": datasets.Value("int64")})
    assert ds.to_hf(with_keys=False).features == hf_features
    assert _compare(rows, _hf_rows(again), "HF -> se -> HF") == N * len(FEATURES)
    # se.build takes the datasets.Dataset and its Features as they are, with the same version id
    built = se.build(hf, hf.features, name="built-from-hf", home=home, progress=False)
    assert built.version == ds.version
    # and the same datasets.Dataset again is a cache hit
    assert se.from_hf(hf, name="from-hf", home=home, progress=False).build_info.startswith("reused")


def test_se_to_hf_to_se(ours: se.CachedDataset, home: Path) -> None:
    back = se.from_hf(ours.to_hf(), name="back", home=home, progress=False)
    assert back.features == FEATURES
    assert back.version == se.build(_rows(), FEATURES, name="back2", home=home, progress=False).version
    assert _compare(_rows(), list(back.with_format("python")), "se -> HF -> se") == N * len(FEATURES)


def test_from_hf_reads_a_selection_and_a_column_subset(ours: se.CachedDataset, home: Path) -> None:
    hf = ours.to_hf().shuffle(seed=5).select(range(10))
    order = np.random.default_rng(5).permutation(N)[:10]  # what datasets' shuffle(seed=5) draws
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES))
    part = se.from_hf(hf, features, name="part", home=home, progress=False)
    expected = [{k: _rows()[i][k] for k in features} for i in order]
    assert _compare(expected, list(part.with_format("python")), "HF selection -> se") == 20


def test_hf_images_given_as_paths_are_read_from_their_files(tmp_path: Path, home: Path) -> None:
    files = []
    for i in range(3):
        path = tmp_path / f"img{i}.png"
        path.write_bytes(_png(i))
        files.append(str(path))
    hf = datasets.Dataset.from_dict({"image": files}, features=datasets.Features(image=datasets.Image()))
    ds = se.from_hf(hf, name="paths", home=home, progress=False)
    assert ds.with_format("python")["image"] == [_png(i) for i in range(3)]


def test_hf_features_with_no_counterpart_are_named(home: Path) -> None:
    nested = datasets.Dataset.from_dict({"meta": [{"a": 1}], "x": [1]})
    with pytest.raises(se.SchemaError, match=r"column 'meta' is a nested dict.*flatten"):
        se.from_hf(nested, name="nested", home=home, progress=False)
    deep = datasets.Dataset.from_dict({"objects": [[{"a": {"b": 1}}]]})
    fields = r"column 'objects': field 'a' of its list items is itself a dict of features"
    with pytest.raises(se.SchemaError, match=fields):
        se.from_hf(deep, name="deep", home=home, progress=False)
    empty = datasets.Dataset.from_dict({"nothing": [None, None]})
    assert empty.features["nothing"] == datasets.Value("null")
    with pytest.raises(se.SchemaError, match=r"column 'nothing' is Value\('null'\).*cast_column"):
        se.from_hf(empty, name="empty", home=home, progress=False)


@pytest.mark.parametrize(("shape", "rows"), [((2, 3), 2), ((None, 3), -1)])
def test_hf_array2d_comes_in_as_a_sequence_of_rows(home: Path, shape: tuple[Any, int], rows: int) -> None:
    features = datasets.Features(m=datasets.Array2D(shape=shape, dtype="uint8"))
    matrices = [[[i, 1, 2], [3, 4, 255]] for i in range(3)]
    hf = datasets.Dataset.from_dict({"m": matrices}, features=features)
    ds = se.from_hf(hf, name="m", home=home, progress=False)
    assert ds.features["m"] == se.Sequence(se.Sequence(se.Value("uint8"), length=3), length=rows)
    assert ds.with_format("python")["m"] == matrices
    again = se.from_hf(ds.to_hf(), name="m", home=home, progress=False)
    assert again.version == ds.version


def test_a_bad_value_from_hf_names_its_row_and_field(home: Path) -> None:
    good, bad = _png(1), b"not an image at all"
    hf = datasets.Dataset.from_dict({"image": [good, good, bad]}, features=datasets.Features(image=datasets.Image()))
    with pytest.raises(se.EncodingError, match=r"row 2.*'image'|'image'.*row 2"):
        se.from_hf(hf, name="bad", home=home, progress=False)
    with pytest.raises(se.CacheNotFoundError, match="no dataset named 'bad'"):
        se.load("bad", home=home)  # nothing was published


def test_exports_carry_the_huggingface_key(ours: se.CachedDataset, tmp_path: Path) -> None:
    stored = ours.to_arrow()
    spec = json.loads(stored.schema.metadata[HF_SCHEMA_KEY])["info"]["features"]
    assert spec["label"] == {"_type": "ClassLabel", "names": NAMES}
    assert se.Features.from_arrow_schema(stored.schema) == FEATURES, "our own key is still there"
    plain = datasets.Dataset(stored)
    assert plain.features["label"].names == NAMES  # label names survive the default layout
    assert plain.features["image"] == datasets.Value("large_binary")  # the bytes, as they are stored
    hf_layout = datasets.Dataset(ours.to_arrow(layout="huggingface"))
    assert isinstance(hf_layout.features["image"], datasets.Image)
    assert hf_layout.features["label"].names == NAMES
    assert _compare(_rows(), _hf_rows(hf_layout), "to_arrow(layout='huggingface') -> HF") == N * len(FEATURES)
    path = ours.to_parquet(tmp_path / "mixed.parquet")  # the Hub's layout by default
    from_parquet = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "hf-cache"))
    assert from_parquet.features["label"].names == NAMES
    assert isinstance(from_parquet.features["image"], datasets.Image)
    assert _compare(_rows(), _hf_rows(from_parquet), "to_parquet() -> HF") == N * len(FEATURES)
    stored = datasets.Dataset.from_parquet(
        str(ours.to_parquet(tmp_path / "stored.parquet", layout="stored")), cache_dir=str(tmp_path / "c2")
    )
    assert stored.features["label"].names == NAMES
    assert stored.features["image"] == datasets.Value("large_binary")
    import duckdb

    image = duckdb.sql(f"select image.bytes from '{path}' limit 1 offset 3").fetchall()
    assert image == [(_rows()[3]["image"],)], "DuckDB reads an image's bytes as image.bytes"


def test_our_shards_are_arrow_files_which_from_file_does_not_read(ours: se.CachedDataset) -> None:
    """docs/format.md says why: our shards are Arrow IPC files (random access), datasets reads streams."""
    shard = ours.cache_meta.shard_paths[0]
    assert shard.read_bytes()[:6] == b"ARROW1"
    with pytest.raises(pa.ArrowInvalid):
        datasets.Dataset.from_file(str(shard))


@pytest.mark.parametrize("layout", ["stored", "huggingface"])
def test_parquet_to_se(ours: se.CachedDataset, tmp_path: Path, home: Path, layout: str) -> None:
    path = ours.to_parquet(tmp_path / f"{layout}.parquet", layout=layout, rows_per_group=10)
    ds = se.from_parquet(path, home=home, progress=False)
    assert ds.name == layout
    assert ds.features == FEATURES
    assert ds.version == ours.version, "the same rows, features and (empty) description: the same version"
    assert _compare(_rows(), list(ds.with_format("python")), f"Parquet ({layout}) -> se") == N * len(FEATURES)
    assert se.from_parquet(path, home=home, progress=False).build_info.startswith("reused")


@pytest.mark.parametrize("layout", ["stored", "huggingface"])
def test_parquet_with_row_columns_keeps_the_keys(tmp_path: Path, home: Path, layout: str) -> None:
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]))
    rows = [(f"pet-{i}.png", {"image": _png(i), "label": i % 2}) for i in range(5)]
    keyed = se.build(rows, features, name="keyed", home=home, progress=False)
    path = keyed.to_parquet(tmp_path / f"keyed-{layout}.parquet", layout=layout, with_row_columns=True)
    assert pq.read_schema(path).names == ["image", "label", "__key__", "__row_hash__"]
    back = se.from_parquet(path, name="keyed", home=home, progress=False)
    assert back.features == features
    assert back.keys() == keyed.keys()
    assert back.version == keyed.version, "the same keys and rows: the same version"
    view = keyed[[3, 1]].to_parquet(tmp_path / "view.parquet", layout=layout, with_row_columns=True)
    assert se.from_parquet(view, name="view", home=home, progress=False).keys() == ["pet-3.png", "pet-1.png"]
    if layout == "huggingface":  # to_hf writes the keys in __key__ too
        assert se.from_hf(keyed.to_hf(), name="via-hf", home=home, progress=False).version == keyed.version
    plain = keyed.to_parquet(tmp_path / f"plain-{layout}.parquet", layout=layout, with_keys=False)
    assert pq.read_schema(plain).names == ["image", "label"]
    assert se.from_parquet(plain, name="plain", home=home, progress=False).keys() == list(range(5))


def test_parquet_written_elsewhere_infers_features_or_takes_them(tmp_path: Path, home: Path) -> None:
    images = [_png(i) for i in range(4)]
    table = pa.table(
        {
            "image": pa.array(images, pa.binary()),
            "label": pa.array([0, 1, 1, 0], pa.int64()),
            "when": pa.array([1, 2, 3, 4], pa.timestamp("ms")),
            "vec": pa.array([[1.0, 2.0]] * 4, pa.list_(pa.float32())),
        }
    )
    pq.write_table(table, tmp_path / "plain.parquet")
    inferred = se.from_parquet(tmp_path / "plain.parquet", home=home, progress=False)
    assert inferred.features == se.Features(
        image=se.Image(), label=se.Value("int64"), when=se.Value("timestamp[ms]"), vec=se.Sequence(se.Value("float32"))
    )
    assert inferred.with_format("python")["image"] == images
    given = se.Features(image=se.Image(), label=se.ClassLabel(names=["no", "yes"]))
    named = se.from_parquet(tmp_path / "plain.parquet", given, name="named", home=home, progress=False)
    assert named.label_counts() == {"no": 2, "yes": 2}
    assert named.column_names == ["image", "label"]
    pq.write_table(pa.table({"m": pa.array([{"a": 1}])}), tmp_path / "nested.parquet")
    # no feature type stores a dict: the message says what to do instead of pointing at features= (no type fits)
    nested = r"column 'm' holds dicts \(Arrow type struct<a: int64>\).*json_normalize.*json\.dumps"
    with pytest.raises(se.SchemaError, match=nested):
        se.from_parquet(tmp_path / "nested.parquet", home=home, progress=False)
    with pytest.raises(se.SchemaError, match=r"column 'meta' holds dicts.*json_normalize"):
        se.from_pandas(pd.DataFrame({"meta": [{"k": 1}, {"k": 2, "v": "s"}]}), name="meta", home=home, progress=False)


def test_pandas_to_se(ours: se.CachedDataset, home: Path) -> None:
    frame = ours.to_pandas()
    ds = se.from_pandas(frame, name="from-pandas", home=home, progress=False)
    assert ds.features == FEATURES  # a frame from to_pandas remembers its features
    assert ds.keys() == list(range(N)), "keyed by the frame's index"
    assert _compare(_rows(), list(ds.with_format("python")), "pandas -> se") == N * len(FEATURES)


def _keyed_pets(home: Path) -> se.CachedDataset:
    """The README's habit: rows keyed by their file names (``yield p.name, {...}``)."""
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES), tags=se.Sequence(se.Value("int64")))
    rows = [(f"pet-{i}.png", {"image": _png(i), "label": i % 3, "tags": [i, None, -i]}) for i in range(7)]
    return se.build(rows, features, name="pets", home=home, progress=False)


ROUND_TRIPS = {
    "hf": lambda ds, tmp, home: se.from_hf(ds.to_hf(), name="back", home=home, progress=False),
    "pandas": lambda ds, tmp, home: se.from_pandas(ds.to_pandas(), name="back", home=home, progress=False),
    "parquet": lambda ds, tmp, home: se.from_parquet(ds.to_parquet(tmp / "p.parquet"), home=home, progress=False),
    "parquet-stored": lambda ds, tmp, home: se.from_parquet(
        ds.to_parquet(tmp / "s.parquet", layout="stored"), home=home, progress=False
    ),
}


@pytest.mark.parametrize("way", sorted(ROUND_TRIPS))
def test_string_keys_survive_the_default_round_trip(tmp_path: Path, home: Path, way: str) -> None:
    ds = _keyed_pets(home)
    back = ROUND_TRIPS[way](ds, tmp_path, home)
    assert back.keys() == ds.keys()
    assert "__key__" not in back.features, "the key is no user column"
    assert back.features == ds.features
    assert se.compare(ds, back).identical
    assert back.version == ds.version, "the same keys and rows: the same version"


def test_exports_without_keys_say_so_and_number_the_rows(tmp_path: Path, home: Path) -> None:
    ds = _keyed_pets(home)
    assert "__key__" not in ds.to_hf(with_keys=False).column_names
    assert pq.read_schema(ds.to_parquet(tmp_path / "p.parquet", with_keys=False)).names == ["image", "label", "tags"]
    frame = ds.to_pandas()
    assert (frame.index.name, frame.index.tolist()) == ("key", ds.keys())
    numbered = ds[2:5].to_pandas(with_keys=False)
    assert (numbered.index.name, numbered.index.tolist()) == ("row", [2, 3, 4])
    assert se.from_pandas(numbered, name="by-row", home=home, progress=False).keys() == [2, 3, 4]


def test_a_webdataset_style_key_column_keys_the_rows_and_a_missing_key_is_named(home: Path) -> None:
    hf = datasets.Dataset.from_dict({"__key__": ["b", "a"], "x": [1, 2]})
    ds = se.from_hf(hf, name="web", home=home, progress=False)
    assert (ds.keys(), ds.column_names) == (["b", "a"], ["x"])
    holey = datasets.Dataset.from_dict({"__key__": ["b", None], "x": [1, 2]})
    with pytest.raises(se.SchemaError, match=r"row 1 of the datasets.Dataset has no key in its __key__ column"):
        se.from_hf(holey, name="holey", home=home, progress=False)


def test_a_list_with_a_missing_item_survives_pandas(home: Path) -> None:
    features = se.Features(ints=se.Sequence(se.Value("int64")), floats=se.Sequence(se.Value("float64")))
    rows = [
        {"ints": [1, None, 2**60], "floats": [0.5, None]},
        {"ints": None, "floats": None},
        {"ints": [], "floats": []},
    ]
    ds = se.build(rows, features, name="lists", home=home, progress=False)
    frame = ds.to_pandas()
    assert frame["ints"].tolist() == [[1, None, 2**60], None, []], "no float: 2**60 stays exact, None stays None"
    back = se.from_pandas(frame, name="back", home=home, progress=False)
    assert list(back) == rows
    assert back.version == ds.version


def test_pandas_nullable_dtypes_and_the_index_come_in_as_docs_exporting_md_says(home: Path) -> None:
    frame = pd.DataFrame(
        {
            "count": pd.array([1, None, 3], dtype="Int64"),
            "flag": pd.array([True, None, False], dtype="boolean"),
            "text": pd.array(["x", None, "z"], dtype="string[pyarrow]"),
        },
        index=pd.Index(["k1", "k2", "k3"], name="file"),
    )
    ds = se.from_pandas(frame, name="nullable", home=home, progress=False)
    assert ds.features == se.Features(count=se.Value("int64"), flag=se.Value("bool"), text=se.Value("large_string"))
    assert list(ds) == [
        {"count": 1, "flag": True, "text": "x"},
        {"count": None, "flag": None, "text": None},
        {"count": 3, "flag": False, "text": "z"},
    ]
    assert ds.keys() == ["k1", "k2", "k3"]
    out = ds.to_pandas()
    assert (out.index.name, out.index.tolist()) == ("key", ["k1", "k2", "k3"]), "the index's name is not kept"
    assert str(out["count"].dtype) == "Int64"
    assert se.from_pandas(out, name="again", home=home, progress=False).version == ds.version
    page = (Path(__file__).resolve().parents[2] / "docs" / "exporting.md").read_text(encoding="utf-8")
    assert "`string[pyarrow]`" in page


def test_a_plain_frame_infers_features_and_names_what_it_cannot(home: Path) -> None:
    frame = pd.DataFrame(
        {
            "label": pd.Categorical(["b", "a", None, "b"], categories=["a", "b"]),
            "count": pd.array([1, None, 3, 4], dtype="Int64"),
            "image": [_png(i) for i in range(4)],
            "text": ["x", "y", None, "z"],
        },
        index=pd.Index(["k1", "k2", "k3", "k4"]),
    )
    ds = se.from_pandas(frame, name="plain", home=home, progress=False)
    text_type = ds.features["text"]  # pandas' own string dtype is large_string in Arrow, object columns string
    assert text_type in (se.Value("string"), se.Value("large_string"))
    assert ds.features == se.Features(
        label=se.ClassLabel(names=["a", "b"]), count=se.Value("int64"), image=se.Image(), text=text_type
    )
    assert ds.keys() == ["k1", "k2", "k3", "k4"]
    got = list(ds.with_format("python"))
    assert [row["label"] for row in got] == [1, 0, None, 1]
    assert [row["count"] for row in got] == [1, None, 3, 4]
    assert [row["image"] for row in got] == [_png(i) for i in range(4)]
    assert [row["text"] for row in got] == ["x", "y", None, "z"]
    numbered = pd.DataFrame({"code": pd.Categorical([1, 0, 1])})  # categories that are ints: by category
    assert se.from_pandas(numbered, name="numbered", home=home, progress=False)["code"] == [1, 0, 1]
    odd = pd.DataFrame({"thing": [object(), object()]})
    with pytest.raises(se.SchemaError, match=r"column 'thing'.*features="):
        se.from_pandas(odd, name="odd", home=home, progress=False)


def test_a_bad_value_from_pandas_names_its_row_key_and_field(home: Path) -> None:
    frame = pd.DataFrame({"label": ["cat", "dog", "cow"]}, index=[10, 11, 12])
    features = se.Features(label=se.ClassLabel(names=["cat", "dog"]))
    with pytest.raises(se.EncodingError, match=r"row 2, key 12.*'label'|'label'.*row 2, key 12") as caught:
        se.from_pandas(frame, features, name="bad", home=home, progress=False)
    assert "cow" in str(caught.value)


def test_every_from_takes_features_name_and_home_alike(tmp_path: Path, home: Path) -> None:
    import inspect

    for function in (se.from_hf, se.from_parquet, se.from_pandas, se.from_lance):
        parameters = inspect.signature(function).parameters
        assert list(parameters)[1] == "features", function.__name__
        for keyword in ("name", "home"):
            assert parameters[keyword].kind is inspect.Parameter.KEYWORD_ONLY, (function.__name__, keyword)
    elsewhere = tmp_path / "elsewhere"
    ds = se.from_parquet(_keyed_pets(home).to_parquet(tmp_path / "p.parquet"), name="p", home=elsewhere, progress=False)
    assert (ds.name, ds.home) == ("p", elsewhere)
    assert se.load("p", home=elsewhere).version == ds.version


BOX_NAMES = ["cat", "dog"]


def _boxes_hf() -> Any:
    """A detection column as datasets writes it: a list of dicts with a fixed-length box and a class label."""
    features = datasets.Features(
        objects=datasets.List(
            {
                "bbox": datasets.List(datasets.Value("float32"), length=4),
                "category": datasets.ClassLabel(names=BOX_NAMES),
            }
        ),
        n=datasets.Value("int64"),
    )
    objects = [
        [{"bbox": [1.0, 2.0, 3.0, 4.0], "category": 1}, {"bbox": [0.0, 0.0, 1.5, 1.0], "category": 0}],
        [],
        None,
        [{"bbox": [5.0, 5.0, 2.0, 2.0], "category": None}],
    ]
    return datasets.Dataset.from_dict({"objects": objects, "n": [1, 2, 3, 4]}, features=features), objects


def test_a_list_of_dicts_comes_in_and_round_trips_with_its_class_names(tmp_path: Path, home: Path) -> None:
    hf, objects = _boxes_hf()
    ds = se.from_hf(hf, name="boxes", home=home, progress=False, box_format=None)  # kept as lists of dicts
    item = se.Sequence({"bbox": se.Sequence(se.Value("float32"), length=4), "category": se.ClassLabel(names=BOX_NAMES)})
    assert ds.features == se.Features(objects=item, n=se.Value("int64"))
    assert ds["objects"] == objects
    assert se.load("boxes", home=home).features == ds.features, "the features JSON keeps the dict item"
    again = ds.to_hf()
    assert again.features["objects"] == hf.features["objects"], "class names kept on the way out"
    assert again["objects"] == objects
    back = {
        "hf": se.from_hf(again, name="via-hf", home=home, progress=False, box_format=None),
        "parquet": se.from_parquet(ds.to_parquet(tmp_path / "boxes.parquet"), home=home, progress=False),
        "pandas": se.from_pandas(ds.to_pandas(), name="via-pandas", home=home, progress=False),
    }
    for way, copy in back.items():
        assert copy.version == ds.version, way
    plain = datasets.Dataset.from_dict({"objects": [[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]]})
    inferred = se.from_hf(plain, name="plain", home=home, progress=False)
    assert inferred.features["objects"] == se.Sequence({"a": se.Value("int64"), "b": se.Value("string")})
    framed = se.from_pandas(
        pd.DataFrame({"objects": [[{"a": 1, "b": "x"}], []]}), name="framed", home=home, progress=False
    )
    assert framed["objects"] == [[{"a": 1, "b": "x"}], []]


def test_a_list_of_dicts_names_the_item_and_field_of_a_bad_value_and_stays_a_lists_item(home: Path) -> None:
    item = se.Sequence({"bbox": se.Sequence(se.Value("float32"), length=4), "category": se.ClassLabel(names=BOX_NAMES)})
    features = se.Features(objects=item)
    assert se.Features.from_dict(features.to_dict()) == features
    with pytest.raises(se.EncodingError, match=r"field 'objects': item 1: field 'category': unknown class 'cow'"):
        se.build(
            [{"objects": [{"bbox": [0, 0, 1, 1]}, {"bbox": [0, 0, 1, 1], "category": "cow"}]}],
            features,
            name="bad",
            home=home,
            progress=False,
        )
    with pytest.raises(se.EncodingError, match=r"item 0: unexpected field\(s\) \['box'\]"):
        se.build([{"objects": [{"box": [0, 0, 1, 1]}]}], features, name="bad", home=home, progress=False)
    with pytest.raises(se.SchemaError, match=r"feature 'top' is a dict of features, which is only a list's item"):
        se.Features(top=item.feature)
    legacy = datasets.Features(objects={"bbox": datasets.List(datasets.List(datasets.Value("float32")))})
    # a dict of lists (what datasets' Sequence of a dict gave, TFDS' convention): hf.flatten() makes list columns
    with pytest.raises(se.SchemaError, match=r"column 'objects' is a nested dict of features.*flatten"):
        features_from_hf(legacy)
    flat = features_from_hf(datasets.Features(objects=legacy["objects"]).flatten())
    assert flat == se.Features({"objects.bbox": se.Sequence(se.Sequence(se.Value("float32")))})
