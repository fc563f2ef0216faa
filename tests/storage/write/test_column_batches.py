"""Sources that yield column batches: Arrow record batches and tables, DataFrames, dicts of lists (batched=True)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import ClassLabel, EncodingError, Features, Image, Value
from stable_explore.storage.read.shard_file import read_shard
from tests.conftest import jpeg_bytes

NAMES = ["cat", "dog", "bird"]
FEATURES = Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"), name=Value("string"))
N = 57


@pytest.fixture(scope="module")
def images() -> list[bytes]:
    return [jpeg_bytes(i) for i in range(N)]


def _rows(images: list[bytes]) -> list[dict[str, Any]]:
    return [{"image": images[i], "label": i % 3, "score": i / 4, "name": f"n{i}"} for i in range(N)]


def _table(images: list[bytes]) -> pa.Table:
    return pa.table(
        {
            "image": pa.array(images, pa.binary()),
            "label": pa.array([i % 3 for i in range(N)], pa.int8()),
            "score": pa.array([i / 4 for i in range(N)], pa.float64()),
            "name": [f"n{i}" for i in range(N)],
        }
    )


def _build(source: Any, name: str, home: Path, **options: Any) -> se.CachedDataset:
    return se.build(source, FEATURES, name=name, home=home, progress=False, batch_size=10, **options)


def test_every_kind_of_column_batch_gives_the_row_builds_version(home: Path, images: list[bytes]) -> None:
    rows = _build(_rows(images), "rows", home)
    table = _table(images)
    frame = table.to_pandas()
    frame["label"] = pd.Categorical([NAMES[i % 3] for i in range(N)])  # names, as a category
    sources = {
        "table": table,
        "record batches": (batch for batch in table.to_batches(max_chunksize=7)),  # smaller than batch_size
        "one big batch": [table.combine_chunks().to_batches()[0]],  # bigger: sliced into batches
        "dataframe": frame,
        "dataframes": [frame.iloc[:30], frame.iloc[30:]],
        "dict of lists": [{name: table.column(name).to_pylist() for name in table.column_names}],
        "dict of arrays": [
            {"image": table["image"], "label": np.arange(N) % 3, "score": table["score"], "name": table["name"]}
        ],
        "columns in another order": table.select(["name", "score", "label", "image"]),
        "rows and batches": [*_rows(images)[:13], table.slice(13, 20), *_rows(images)[33:]],
    }
    for kind, source in sources.items():
        batched = kind.startswith("dict")
        built = _build(source, kind.replace(" ", "-"), home, batched=batched)
        assert built.version == rows.version, kind
        assert len(built) == N
        assert built[N - 1]["name"] == f"n{N - 1}"
    stored = [read_shard(path).num_rows for path in built.cache_meta.shard_paths]
    assert sum(stored) == N


def test_pandas_missing_marks_in_a_dataframe_are_nulls_as_from_pandas_stores_them(home: Path) -> None:
    # pandas 3 marks a missing text as NaN, a missing Int64 as NA and a missing time as NaT; a row build
    # gives None for each. A float column keeps its NaN: there it is a value.
    features = Features(
        name=Value("string"),
        count=Value("int64"),
        at=Value("timestamp[us, tz=UTC]"),
        x=Value("float64"),
        label=ClassLabel(names=NAMES),
    )
    times = pd.to_datetime(["2024-01-01", None, "2024-01-03"]).tz_localize("UTC")
    frame = pd.DataFrame(
        {
            "name": pd.Series(["a", None, "c"], dtype="str"),
            "count": pd.array([1, None, 3], dtype="Int64"),
            "at": times,
            "x": [1.5, float("nan"), 2.0],
            "label": pd.Series(["cat", None, "dog"], dtype="str"),
        }
    )
    rows = [
        {"name": "a", "count": 1, "at": times[0].to_pydatetime(), "x": 1.5, "label": 0},
        {"name": None, "count": None, "at": None, "x": float("nan"), "label": None},
        {"name": "c", "count": 3, "at": times[2].to_pydatetime(), "x": 2.0, "label": 1},
    ]
    from_rows = se.build(rows, features, name="rows-with-nones", home=home, progress=False)
    from_frame = se.build(frame, features, name="frame-with-marks", home=home, progress=False)
    assert from_frame.version == from_rows.version
    middle = from_frame.with_format("python")[1]
    assert [middle[name] for name in ("name", "count", "at", "label")] == [None, None, None, None]
    assert middle["x"] != middle["x"]  # NaN kept


def test_keys_come_from_the_key_column(home: Path, images: list[bytes]) -> None:
    pairs = [(f"k{i:03d}", row) for i, row in enumerate(_rows(images))]
    by_rows = _build(pairs, "pairs", home)
    keyed = _table(images).append_column("__key__", pa.array([f"k{i:03d}" for i in range(N)]))
    by_columns = _build(keyed, "keyed", home)
    assert by_columns.version == by_rows.version
    duplicated = keyed.set_column(4, "__key__", pa.array([f"k{i:03d}" for i in range(N - 1)] + ["k005"]))
    with pytest.raises(se.DuplicateKeyError, match="rows 5 and 56 both have key 'k005'"):
        _build(duplicated, "dup", home)


def test_a_bad_value_names_its_row_and_field_and_nothing_is_published(home: Path, images: list[bytes]) -> None:
    table = _table(images)
    kept = _build(table, "pets", home)
    bad_label = table.set_column(1, "label", pa.array([i % 3 for i in range(40)] + [7] + [0] * (N - 41), pa.int64()))
    with pytest.raises(EncodingError) as caught:
        _build(bad_label, "pets", home)
    assert (caught.value.index, caught.value.field) == (40, "label")
    assert "unknown class 7" in caught.value.reason
    assert caught.value.__notes__[-1] == (
        f"{N} rows were read; nothing was saved; pets@{kept.version} is kept as the latest version"
    )
    broken = list(images)
    broken[23] = images[23][:40]
    with pytest.raises(EncodingError) as caught:
        _build(table.set_column(0, "image", pa.array(broken, pa.binary())), "pets", home)
    assert (caught.value.index, caught.value.key, caught.value.field) == (23, 23, "image")
    assert "no frame header" in caught.value.reason
    with pytest.raises(EncodingError) as caught:
        _build({**table.to_pydict(), "score": [1.0] * 9 + ["high"] + [1.0] * (N - 10)}, "pets", home, batched=True)
    assert (caught.value.index, caught.value.field) == (9, "score")
    with pytest.raises(EncodingError) as caught:
        _build(table.set_column(1, "label", pa.array([0.0] * N)), "pets", home)  # 1.0 would pass for 1 as a row
    assert (caught.value.index, caught.value.field) == (0, "label")
    assert se.load("pets", home=home).version == kept.version
    assert [p.name for p in (home / "pets" / "versions").iterdir()] == [kept.version]


def test_a_batch_with_other_columns_is_refused_naming_them(home: Path, images: list[bytes]) -> None:
    table = _table(images)
    with pytest.raises(EncodingError, match=r"missing field\(s\) \['name'\]; unexpected field\(s\) \['title'\]"):
        _build(table.rename_columns(["image", "label", "score", "title"]), "odd", home)
    with pytest.raises(EncodingError, match="must have one length"):
        _build([{"image": images, "label": [0], "score": [0.0], "name": ["a"]}], "odd", home, batched=True)


def test_without_batched_a_dict_is_a_row(home: Path) -> None:
    features = Features(x=Value("int64"))
    with pytest.raises(EncodingError, match="row 0, key 0, field 'x': expected int64"):
        se.build([{"x": [1, 2]}], features, name="d", home=home, progress=False)
    built = se.build([{"x": [1, 2]}, {"x": [3]}], features, name="d", home=home, progress=False, batched=True)
    assert [row["x"] for row in built] == [1, 2, 3]


def test_a_parallel_build_refuses_column_batches_clearly(home: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    features = Features(x=Value("int64"))
    with pytest.raises(se.InvalidOptionError, match="batched=True builds serially"):
        se.build([{"x": [1]}], features, name="p", home=home, progress=False, batched=True, num_proc=2)

    def batches(parts: list[int]) -> Any:
        for part in parts:
            yield pa.record_batch({"x": pa.array([part, part + 1])})

    with ThreadPoolExecutor(2) as pool, pytest.raises(Exception, match="is a column batch \\(RecordBatch\\)"):
        se.build(batches, features, kwargs={"parts": [0, 10]}, name="p", home=home, progress=False, executor=pool)


def test_a_source_of_column_batches_is_read_one_batch_at_a_time(tmp_path: Path) -> None:
    from stable_explore.storage.write.writer import write_shards

    pulled = []

    def batches() -> Any:
        for start in range(0, 50_000, 5_000):
            pulled.append(start)
            yield pa.record_batch({"x": pa.array(range(start, start + 5_000))})

    seen_at_write: list[int] = []
    fields = write_shards(
        batches(),
        Features(x=Value("int64")),
        tmp_path,
        batch_size=1000,
        on_batch=lambda rows, nbytes: seen_at_write.append(len(pulled)),
    )
    assert fields["num_rows"] == 50_000
    # each batch is written before the next is pulled (holding up to batch_size batches grew memory with the rows)
    assert seen_at_write[:5] == [1] * 5
    assert seen_at_write[5:10] == [2] * 5
