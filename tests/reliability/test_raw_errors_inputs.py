"""Issue 34 #8: bad inputs are project errors naming the row or the column, never a raw library error.

Before: an embedding with a NaN raised numpy's ``LinAlgError`` (a projection) or scikit-learn's
``ValueError`` (neighbours); all-zero ``pred_probs`` silently flagged 200 of 300 rows; a batched map
returning a scalar raised ``TypeError: 'int' object is not iterable``; duplicate column names raised
``AttributeError`` / ``KeyError`` in ``from_pandas`` / ``from_parquet`` (a table took one of them in
silence); a complex column raised ``ArrowNotImplementedError``; a Lance column named ``''`` was
called corruption.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import (
    CacheCorruptionError,
    EncodingError,
    InvalidArgumentTypeError,
    InvalidOptionError,
    SchemaError,
)


def _ours(call: Callable[[], Any], kind: type[Exception], match: str) -> Exception:
    """The error ``call`` raises: of ``kind`` (a project error, never a raw builtin or library one), matching."""
    with pytest.raises(kind, match=match) as raised:
        call()
    assert isinstance(raised.value, se.StableExploreError)
    assert type(raised.value).__module__ == "stable_explore.errors"
    return raised.value


@pytest.fixture
def labelled(tmp_path: Path) -> se.CachedDataset:
    features = se.Features(x=se.Value("int64"), label=se.ClassLabel(names=["a", "b", "c"]))
    rows = [(f"k{i}", {"x": i, "label": i % 3}) for i in range(300)]
    return se.build(rows, features, name="d", home=tmp_path, progress=False)


def _with_nans() -> np.ndarray:
    vectors = np.random.default_rng(0).normal(size=(300, 4))
    vectors[7, 2] = np.nan
    vectors[40, 0] = np.inf
    return vectors


EMBEDDING_CALLS: dict[str, Callable[[np.ndarray], Any]] = {
    "project": lambda v: signals.project(v),
    "pca_2d": lambda v: signals.pca_2d(v),
    "neighbours-numpy": lambda v: signals.nearest_neighbors(v, 3, backend="numpy"),
    "neighbours-sklearn": lambda v: signals.nearest_neighbors(v, 3, backend="sklearn"),
    "nearest_rows": lambda v: signals.nearest_rows(v, 0),
}


@pytest.mark.parametrize("name", list(EMBEDDING_CALLS))
def test_an_embedding_with_nan_names_its_rows(name: str) -> None:
    if name.endswith("sklearn"):
        pytest.importorskip("sklearn")
    call = EMBEDDING_CALLS[name]
    _ours(
        lambda: call(_with_nans()),
        InvalidOptionError,
        r"2 rows hold a NaN or infinite value: row 7 \(nan in column 2\), row 40 \(inf in column 0\)",
    )


def test_an_embedding_of_a_dataset_with_nan_names_every_bad_row_and_key(labelled: se.CachedDataset) -> None:
    _ours(
        lambda: signals.embedding_outliers(labelled, _with_nans()),
        InvalidOptionError,
        r"row 7 \(key 'k7'\), row 40 \(key 'k40'\) \(2 rows\) have a NaN or infinite value",
    )


@pytest.mark.parametrize("method", ["numpy", "auto"])
def test_pred_probs_that_are_no_distribution_are_refused_naming_the_rows(
    labelled: se.CachedDataset, method: str
) -> None:
    error = _ours(
        lambda: signals.label_issues(labelled, np.zeros((300, 3)), method=method),
        InvalidOptionError,
        r"300 of 300 rows hold probabilities that do not sum to 1 .*row 0 \(key 'k0'\) sums to 0",
    )
    assert "and 295 more" in str(error)
    probs = np.full((300, 3), 1 / 3)
    probs[12] = [0.5, 0.5, 0.5]
    _ours(
        lambda: signals.label_issues(labelled, probs, method=method),
        InvalidOptionError,
        r"1 of 300 rows .*row 12 \(key 'k12'\) sums to 1\.5",
    )


def test_probabilities_of_a_float32_softmax_are_accepted(labelled: se.CachedDataset) -> None:
    logits = np.random.default_rng(1).normal(size=(300, 3)).astype(np.float32)
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float16)
    table = signals.label_issues(labelled, probs, method="numpy")
    assert table.num_rows <= 300


@pytest.mark.parametrize(
    ("function", "said"),
    [
        (lambda batch: 3, "returned int for the batch of rows 0-99"),
        (lambda batch: {"y": 3}, "returned int for column 'y' of the batch of rows 0-99"),
        (lambda batch: {"y": "text"}, "returned str for column 'y' of the batch of rows 0-99"),
    ],
)
def test_a_batched_map_that_returns_no_columns_names_the_batch(
    labelled: se.CachedDataset, function: Callable[[Any], Any], said: str
) -> None:
    _ours(
        lambda: labelled.map(function, batched=True, batch_size=100, progress=False),
        InvalidArgumentTypeError,
        rf"{said} \(its first row, 0, has key 'k0'\); a batched function must return a dict of columns, "
        r"each a list as long as the batch \(100 values\)",
    )


def test_a_batched_map_may_return_arrays_and_iterables(labelled: se.CachedDataset) -> None:
    mapped = labelled.map(
        lambda batch: {"y": np.asarray(batch["x"]) * 2, "z": (x + 1 for x in batch["x"])},
        batched=True,
        batch_size=100,
        progress=False,
    )
    assert mapped[299]["y"] == 598
    assert mapped[299]["z"] == 300


def _duplicated_frame() -> pd.DataFrame:
    return pd.DataFrame([[1, 2], [3, 4]], columns=["a", "a"])


@pytest.mark.parametrize("with_features", [False, True])
def test_duplicate_column_names_of_a_frame_are_named(tmp_path: Path, with_features: bool) -> None:
    features = se.Features(a=se.Value("int64")) if with_features else None
    _ours(
        lambda: se.from_pandas(_duplicated_frame(), features, name="p", home=tmp_path, progress=False),
        SchemaError,
        "the DataFrame has more than one column named 'a'",
    )


def test_duplicate_column_names_of_a_parquet_file_are_named(tmp_path: Path) -> None:
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"]), path)
    _ours(
        lambda: se.from_parquet(path, name="q", home=tmp_path / "home", progress=False),
        SchemaError,
        r"dup\.parquet has more than one column named 'a'",
    )


@pytest.mark.parametrize(
    "source",
    [_duplicated_frame, lambda: pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])],
    ids=["DataFrame", "Table"],
)
def test_a_batch_source_with_duplicate_column_names_is_refused(tmp_path: Path, source: Callable[[], Any]) -> None:
    _ours(
        lambda: se.build(source(), se.Features(a=se.Value("int64")), name="b", home=tmp_path, progress=False),
        EncodingError,
        "field 'a': a column batch .* has more than one column named 'a'",
    )


COMPLEX = np.array([1j, 2, 3, 4 + 1j])
REFUSAL = r"column 'z' holds complex numbers, which are not stored .*'z_real' = values\.real and 'z_imag'"


def test_a_complex_column_of_a_frame_is_named(tmp_path: Path) -> None:
    _ours(
        lambda: se.from_pandas(pd.DataFrame({"z": COMPLEX}), name="c", home=tmp_path, progress=False),
        SchemaError,
        REFUSAL,
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda ds: ds.add_columns({"z": COMPLEX}, progress=False),
        lambda ds: ds.map(lambda row: {"z": complex(row["x"], 1)}, progress=False),
        lambda ds: ds.map(lambda batch: {"z": np.asarray(batch["x"]) * 1j}, batched=True, progress=False),
    ],
    ids=["add_columns", "map", "batched map"],
)
def test_a_complex_column_added_to_a_dataset_is_named(tmp_path: Path, call: Callable[[se.CachedDataset], Any]) -> None:
    ds = se.build(
        [{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="d", home=tmp_path, progress=False
    )
    _ours(lambda: call(ds), SchemaError, REFUSAL)


def test_a_lance_column_with_an_empty_name_is_named_not_called_corruption(tmp_path: Path) -> None:
    lance = pytest.importorskip("lance")
    folder = tmp_path / "unnamed.lance"
    lance.write_dataset(pa.table({"": [1, 2], "b": [3, 4]}), str(folder))
    error = _ours(
        lambda: se.from_lance(folder, home=tmp_path / "home"),
        SchemaError,
        r"unnamed\.lance has a column with an empty name \('', column 0 of 2\).*the data is not damaged.*\['b'\]",
    )
    assert not isinstance(error, CacheCorruptionError)


def test_similarity_by_an_array_says_what_by_takes(labelled: se.CachedDataset) -> None:
    _ours(
        lambda: signals.similarity(labelled, np.zeros((300, 2))),  # type: ignore[arg-type]
        InvalidArgumentTypeError,
        r"by= names what to compare rows by .*got ndarray",
    )


def test_a_column_with_an_empty_name_is_named_so(tmp_path: Path) -> None:
    ds = se.build(
        [{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="d", home=tmp_path, progress=False
    )
    _ours(
        lambda: ds.add_columns({"": [1, 2, 3, 4]}, progress=False),
        SchemaError,
        "a column needs a name of text, not empty",
    )


def test_a_map_whose_column_names_are_not_text_keeps_them_one_column(tmp_path: Path) -> None:
    ds = se.build(
        [{"x": i} for i in range(4)], se.Features(x=se.Value("int64")), name="d", home=tmp_path, progress=False
    )
    assert ds.map(lambda row: {1: row["x"]}, progress=False)["1"] == [0, 1, 2, 3]
