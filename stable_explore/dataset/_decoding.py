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

import numpy as np

from stable_explore._optional import require
from stable_explore.errors import CacheCorruptionError, ImageTooLargeError
from stable_explore.schema import Array3D, Boxes, Features, Image, Keypoints, Mask, Sequence, Video
from stable_explore.schema.fields import Fields

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.dataset._selection import Rows
    from stable_explore.schema.base import Feature

__all__ = ["FORMATS", "decode_table", "decode_values", "needs_decoding"]

FORMATS = ("pil", "numpy", "python", "arrow", "torch")
_IMAGE_FORMATS = {"pil": "pil", "numpy": "numpy", "python": "bytes", "torch": "numpy"}  # how each returns images


def needs_decoding(feature: Feature) -> bool:
    """Whether a feature's stored value differs from what users get (images, arrays, boxes, masks, videos...)."""
    if isinstance(feature, (Image, Array3D, Boxes, Mask, Keypoints, Video)):
        return True
    if isinstance(feature, Fields):
        return any(needs_decoding(f) for _, f in feature.fields)
    return isinstance(feature, Sequence) and needs_decoding(feature.feature)


def decode_values(
    feature: Feature, name: str, values: list[Any], format: str, rows: Rows | None, *, where: tuple[str, str | Path]
) -> list[Any]:
    """Decode one column's stored values; ``rows`` are their row numbers and ``where`` (ref, cache dir) the cache."""
    if not needs_decoding(feature):
        return to_torch_values(values) if format == "torch" else values
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
    decoded = [_writable(value) for value in decoded]
    return to_torch_values(decoded, images=_holds_images(feature)) if format == "torch" else decoded


def _holds_images(feature: Feature) -> bool:
    if isinstance(feature, Fields):
        return any(_holds_images(f) for _, f in feature.fields)
    return isinstance(feature, Image) or (isinstance(feature, Sequence) and _holds_images(feature.feature))


def _writable(value: object) -> object:
    """An array that owns writable memory: arrays over immutable bytes are copied once.

    ``torch.from_numpy`` (and a DataLoader's collate) warns on read-only arrays, because writing
    to the tensor would write to memory numpy promised not to change; a writable copy is safe.
    """
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    if isinstance(value, list):
        return [_writable(item) for item in value]
    return value


def to_torch_values(values: list[Any], *, images: bool = False) -> list[Any]:
    """One column's values for ``with_format("torch")``, tensors as ``datasets`` makes them.

    Images become channels-first ``uint8`` tensors (C, H, W); other integer arrays and ints
    ``int64``, floats ``float32``; text and nulls stay as they are; a list whose items become
    tensors of one shape and dtype is stacked into one tensor.
    """
    torch = require("torch", "torch", 'ds.with_format("torch")')

    return [to_torch(value, torch, image=images) for value in values]


def to_torch(value: Any, torch: Any, *, image: bool = False) -> Any:
    """A value as a tensor where it is numeric (see :func:`to_torch_values`)."""
    if value is None or isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return value
    if isinstance(value, dict):  # a row of boxes: a dict of lists, each made a tensor where it can be
        return {name: to_torch(item, torch) for name, item in value.items()}
    if isinstance(value, list):
        items = [to_torch(item, torch, image=image) for item in value]
        tensors = items and all(isinstance(item, torch.Tensor) for item in items)
        if tensors and len({(tuple(item.shape), item.dtype) for item in items}) == 1:
            return torch.stack(items)
        return items
    if isinstance(value, np.ndarray) and image:
        pixels = value[:, :, np.newaxis] if value.ndim == 2 else value
        return torch.from_numpy(np.ascontiguousarray(pixels.transpose((2, 0, 1))))
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "iu" and value.dtype != np.uint64:
        return torch.from_numpy(_writable(np.asarray(value, dtype=np.int64)))
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f":
        return torch.from_numpy(_writable(np.asarray(value, dtype=np.float32)))
    if isinstance(value, np.ndarray):
        return torch.from_numpy(_writable(value))
    if isinstance(value, (bool, int, float, np.generic)):
        return torch.tensor(value)
    return value


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
