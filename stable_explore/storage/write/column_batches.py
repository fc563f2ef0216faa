"""Column batches a build's source may yield: Arrow record batches and tables, pandas DataFrames, dicts of lists.

A column batch is many rows at once, one sequence per field (as Hugging Face's ``from_dict`` and
``from_pandas`` and Lance's ``write_dataset`` take them). Its columns are checked by the features
as rows are (a bad value's error names its row and field), without a Python object per value
where the Arrow type allows. An optional ``__key__`` column gives the rows' keys; without one,
a row's key is its running index, as for a plain dict.

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore import Features, Value
>>> batch = pa.record_batch({"x": pa.array([1, 2, 3])})
>>> is_column_batch(batch, batched=False), is_column_batch({"x": [1, 2]}, batched=False)
(True, False)
>>> columns, keys, rows = next(batch_columns(batch, Features(x=Value("int64")), batched=False, index=0))
>>> rows, keys is None, columns[0].to_pylist()
(3, True, [1, 2, 3])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore._arrays import duplicate_names
from stable_explore.errors import EncodingError
from stable_explore.schema.base import is_missing_mark
from stable_explore.schema.columns import KEY_COLUMN
from stable_explore.schema.value import Value

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = ["batch_columns", "batch_rows", "is_column_batch"]


def _is_dataframe(item: object) -> bool:
    module = type(item).__module__
    return module.startswith("pandas") and type(item).__name__ == "DataFrame"


def is_column_batch(item: object, *, batched: bool) -> bool:
    """Whether a source's item is a column batch (a dict is one only with ``batched=True``)."""
    if isinstance(item, (pa.RecordBatch, pa.Table)) or _is_dataframe(item):
        return True
    return batched and isinstance(item, Mapping)


def batch_rows(item: Any) -> int:
    """The number of rows of a column batch (of any kind :func:`is_column_batch` accepts)."""
    if isinstance(item, (pa.RecordBatch, pa.Table)) or _is_dataframe(item):
        return len(item)
    lengths = {len(values) for values in item.values()}
    return lengths.pop() if len(lengths) == 1 else 0


def _as_column(values: Any) -> list[Any] | pa.Array:
    """A dict-of-lists column as a list of Python values, or as Arrow where it already is Arrow or numpy."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biuf":
        return pa.array(values)
    if isinstance(values, list):
        return values
    return list(values)


def _pandas_column(series: Any, *, keeps_nan: bool) -> list[Any] | pa.Array:
    """A DataFrame column: Arrow when pyarrow converts it as it is (NaN stays NaN), else its Python values.

    Pandas' marks of a missing value (``NA``, ``NaT``, and NaN outside a float feature: what pandas 3
    puts in a text column) become None, as :func:`stable_explore.from_pandas` stores them.
    """
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(series.cat.categories.dtype)
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "biuf":
        return pa.array(series.to_numpy(), from_pandas=False)
    return [None if is_missing_mark(value, keeps_nan=keeps_nan) else value for value in series.tolist()]


def _keeps_nan(feature: object) -> bool:
    """Whether NaN is a value of this feature (a float), not a missing one."""
    return isinstance(feature, Value) and feature.dtype.startswith("float")


def _named_columns(item: Any, batched: bool, features: Features) -> tuple[dict[str, Any], int]:
    """(column name -> column, rows) of a column batch."""
    names = item.schema.names if isinstance(item, pa.RecordBatch) else list(item.columns) if _is_dataframe(item) else []
    repeated = duplicate_names(names)
    if repeated:  # one of them would be taken in silence (a table), or the column read as a frame (pandas)
        kind = "an Arrow table or record batch" if isinstance(item, pa.RecordBatch) else "a DataFrame"
        msg = (
            f"a column batch ({kind}) has more than one column named {', '.join(map(repr, repeated))}; "
            f"a dataset's columns need distinct names: rename or drop the copies first"
        )
        raise EncodingError(msg, field=repeated[0])
    if isinstance(item, pa.RecordBatch):
        return {name: item.column(i) for i, name in enumerate(item.schema.names)}, item.num_rows
    if _is_dataframe(item):
        named = {str(name): item[name] for name in item.columns}
        columns = {
            name: _pandas_column(series, keeps_nan=_keeps_nan(features.get(name))) for name, series in named.items()
        }
        return columns, len(item)
    assert batched
    assert isinstance(item, Mapping)
    columns = {str(name): _as_column(values) for name, values in item.items()}
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        msg = f"the columns of a batch (a dict of lists) must have one length, got {lengths}"
        raise EncodingError(msg)
    return columns, next(iter(lengths.values()), 0)


def _check_names(names: list[str], features: Features, index: int) -> None:
    problem = features.check_columns(dict.fromkeys(name for name in names if name != KEY_COLUMN))
    if problem:  # columns in another order are taken in the features' order
        msg = f"a column batch has {problem}"
        raise EncodingError(msg, index=index)


def batch_columns(
    item: object, features: Features, *, batched: bool, index: int
) -> Iterator[tuple[list[list[Any] | pa.Array], pa.Array | None, int]]:
    """The parts of a column batch: (columns in the features' order, its keys or None, rows), a part at a time.

    A table gives a part per record batch; every other kind, one part. ``index`` is the running
    index of the batch's first row (errors name it).
    """
    if isinstance(item, pa.Table):
        for batch in item.to_batches():
            yield from batch_columns(batch, features, batched=batched, index=index)
            index += batch.num_rows
        return
    named, rows = _named_columns(item, batched, features)
    _check_names(list(named), features, index)
    keys = named.get(KEY_COLUMN)
    if keys is not None and not isinstance(keys, pa.Array):
        try:
            keys = pa.array(keys)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            msg = f"the keys of a column batch must be all ints or all strings: {exc}"
            raise EncodingError(msg, index=index) from exc
    yield [named[name] for name in features], keys, rows
