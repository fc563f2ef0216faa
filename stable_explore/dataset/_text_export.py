"""Rows as plain Python values, and written as CSV or JSON Lines, the way Hugging Face ``datasets`` gives them.

``ds.to_dict()`` / ``ds.to_list()`` and ``ds.to_csv(path)`` / ``ds.to_json(path)`` read the
rows in batches and give each value as ``datasets`` does: a label is its class index, an array
(``Array3D``, a list of arrays) nested lists, a date a ``datetime``. An image stays its encoded
file bytes (JPEG, PNG, ...), as ``to_pandas()`` gives it by default (``datasets`` gives
``{"bytes": ..., "path": None}``). CSV and JSON have no bytes: a column of images or other bytes is
refused, naming it (drop it with ``remove_columns``, or use ``to_parquet``). In a CSV file a list
or array cell is its JSON text (``[[1, 2]]``), where ``datasets`` writes numpy's print-out of it.

A file is written through a temporary file beside it, renamed over ``path`` only when every row
was written: an error or an interrupt leaves the old file (or none), never half of one.

Examples
--------
>>> import tempfile, pathlib, stable_explore as se
>>> home, out = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
>>> ds = se.build([{"x": i, "s": "ab"[i % 2]} for i in range(3)],
...               se.Features(x=se.Value("int64"), s=se.Value("string")), name="n", home=home, progress=False)
>>> plain_batches(ds, 2).__next__()
{'x': [0, 1], 's': ['a', 'b']}
>>> write_text(ds, out / "n.jsonl", "json").read_text().splitlines()[0]
'{"x":0,"s":"a"}'
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stable_explore.errors import InvalidOptionError, SchemaError
from stable_explore.schema import Image, Sequence

if TYPE_CHECKING:
    from stable_explore.dataset._members import DatasetMembers
    from stable_explore.schema.base import Feature

__all__ = ["TEXT_FORMATS", "plain_batches", "write_text"]

TEXT_FORMATS = ("csv", "json")
_BATCH = 1000  # rows per batch, as datasets writes them


def _holds_images(feature: Feature) -> bool:
    return isinstance(feature, Image) or (isinstance(feature, Sequence) and _holds_images(feature.feature))


def _batch_tables(ds: DatasetMembers, batch_size: int) -> Iterator[pa.Table]:
    """The rows in batches, images as their stored bytes, everything else in the ``datasets`` layout."""
    from stable_explore.schema.huggingface import to_hf_layout

    if batch_size < 1:
        msg = f"batch_size must be at least 1, got {batch_size}"
        raise InvalidOptionError(msg)
    features = ds.features
    columns = list(features)
    images = [name for name in columns if _holds_images(features[name])]
    arrow = ds.with_format("arrow")
    for table in arrow.iter(batch_size=batch_size):
        laid_out = to_hf_layout(table.drop_columns(images), features)
        yield pa.Table.from_arrays(
            [table.column(name) if name in images else laid_out.column(name) for name in columns], names=columns
        )


def plain_batches(ds: DatasetMembers, batch_size: int = _BATCH) -> Iterator[dict[str, list[Any]]]:
    """The rows as plain Python values, ``batch_size`` rows at a time (a dict of column -> list each)."""
    for table in _batch_tables(ds, batch_size):
        yield table.to_pydict()


def _has_bytes(arrow_type: pa.DataType) -> bool:
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return True
    if pa.types.is_fixed_size_binary(arrow_type):
        return True
    if pa.types.is_struct(arrow_type):
        return any(_has_bytes(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return _has_bytes(arrow_type.value_type)
    return False


def write_text(ds: DatasetMembers, path: str | os.PathLike[str], format: str, *, batch_size: int = _BATCH) -> Path:
    """Write ``ds``'s rows to ``path`` as CSV (a header, no index) or JSON Lines (a record per line); return it.

    Values are written as ``datasets``' ``to_csv`` / ``to_json`` write them (pandas writes each
    batch). A column of bytes (images) is refused with a :class:`SchemaError` naming it.
    """
    if format not in TEXT_FORMATS:
        msg = f"format must be one of {TEXT_FORMATS}, got {format!r}"
        raise InvalidOptionError(msg)
    from stable_explore.schema.huggingface import hf_arrow_type
    from stable_explore.storage.backends.fsutil import replacing

    features = ds.features
    binary = [name for name, feature in features.items() if _has_bytes(_plain_type(feature, hf_arrow_type))]
    if binary:
        msg = (
            f"to_{format} cannot write column(s) {binary}: they hold bytes (images or binary values), which "
            f"{format.upper()} has no form for; drop them first (ds.remove_columns({binary!r}).to_{format}(...)), "
            "or use to_parquet, which keeps them"
        )
        raise SchemaError(msg)
    from stable_explore.dataset._export_target import export_file

    target = export_file(Path(path), what=format.upper(), ds=ds)  # never a folder, a home or a version's file
    with replacing(target, durable=False) as tmp, tmp.open("w", encoding="utf-8", newline="") as handle:
        first = True
        for table in _batch_tables(ds, batch_size):
            if format == "csv":
                _csv_cells(table).to_pandas(types_mapper=_nullable_ints).to_csv(handle, index=False, header=first)
            else:
                text = table.to_pandas(types_mapper=_nullable_ints).to_json(orient="records", lines=True)
                handle.write(text if text.endswith("\n") or not text else text + "\n")
            first = False
        if first and format == "csv":  # no rows: the header alone, as datasets writes it
            handle.write(",".join(features) + "\n")
    return target


def _nullable_ints(arrow_type: pa.DataType) -> Any:
    """The nullable pandas integer dtype of an Arrow integer type: a null stays empty and 3 stays ``3``, not ``3.0``."""
    import pandas as pd

    if not pa.types.is_integer(arrow_type):
        return None
    return pd.api.types.pandas_dtype(str(arrow_type).replace("uint", "UInt").replace("int", "Int"))


def _csv_cells(table: pa.Table) -> pa.Table:
    """``table`` with each list or array cell as its JSON text (a CSV cell holds text; numpy's repr is not data)."""
    import json

    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            texts = [None if value is None else json.dumps(value, default=str) for value in column.to_pylist()]
            column = pa.chunked_array([pa.array(texts, type=pa.string())])
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _plain_type(feature: Feature, hf_arrow_type: Any) -> pa.DataType:
    """The Arrow type a column's values are written from (images: their stored bytes)."""
    if _holds_images(feature):
        return pa.binary()
    arrow_type: pa.DataType = hf_arrow_type(feature)
    return arrow_type
