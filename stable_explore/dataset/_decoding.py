"""Stored values -> what users get, in a dataset's format: PIL images, arrays, bytes, or Arrow tables.

A value that cannot be decoded (damaged bytes) raises :class:`CacheCorruptionError` naming its
row, field and cache, never a bare PIL error.

Examples
--------
>>> import pyarrow as pa
>>> from stable_explore import Features, Value
>>> decode_table(pa.table({"x": [1, 2]}), Features(x=Value("int64")), "pil", range(2), where=("t", "t"))
[{'x': 1}, {'x': 2}]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.errors import CacheCorruptionError, ImageTooLargeError
from stable_explore.schema import Array3D, Features, Image, Sequence

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.dataset._selection import Rows

__all__ = ["FORMATS", "decode_table", "decode_values", "needs_decoding"]

FORMATS = ("pil", "numpy", "python", "arrow")
_IMAGE_FORMATS = {"pil": "pil", "numpy": "numpy", "python": "bytes"}  # how each format returns images


def needs_decoding(feature: Any) -> bool:
    """Whether a feature's stored value differs from what users get (images and arrays)."""
    if isinstance(feature, (Image, Array3D)):
        return True
    return isinstance(feature, Sequence) and needs_decoding(feature.feature)


def decode_values(
    feature: Any, name: str, values: list[Any], format: str, rows: Rows | None, *, where: tuple[str, str | Path]
) -> list[Any]:
    """Decode one column's stored values; ``rows`` are their row numbers and ``where`` (ref, cache dir) the cache."""
    if not needs_decoding(feature):
        return values
    image_format = _IMAGE_FORMATS[format]
    decoded = []
    for i, value in enumerate(values):
        try:
            decoded.append(feature.decode_value(value, image_format=image_format))
        except ImageTooLargeError as exc:
            row = int(rows[i]) if rows is not None else i
            msg = f"row {row} (in {where[0]}), field {name!r}: {exc}"
            raise ImageTooLargeError(msg) from exc
        except (OSError, ValueError, SyntaxError) as exc:
            row = int(rows[i]) if rows is not None else i
            msg = f"row {row} (in {where[0]}), field {name!r}: the stored value cannot be decoded: {exc}"
            raise CacheCorruptionError(where[1], msg) from exc
    return decoded


def decode_table(
    table: pa.Table, features: Features, format: str, rows: Rows | None, *, where: tuple[str, str | Path]
) -> list[Any]:
    """Rows of ``table`` as dicts of decoded values (or one-row tables in the ``"arrow"`` format)."""
    if format == "arrow":
        return [table.slice(i, 1) for i in range(table.num_rows)]
    columns = {
        name: decode_values(features[name], name, table.column(name).to_pylist(), format, rows, where=where)
        for name in features
    }
    if not columns:
        return [{} for _ in range(table.num_rows)]
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
