"""The matrix's feature sets and their plain-Python model: what each row holds, and how a read value is compared.

Each feature set is a few dozen rows of one family of feature types, with a null wherever the type allows one.
``rows(name, indexes)`` is a module-level generator (so ``num_proc`` and Dask workers import it by name);
``model(name)`` is the same rows as plain Python values (label names, pixel arrays, lists) that reads must equal.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image as PILImage

import stable_explore as se

ROWS = 24
LABELS = ["cat", "dog", "bird"]
FLAGS = ["x", "y"]
IMAGE_MODES = ["L", "LA", "RGB", "RGBA", "P", "I;16", "CMYK"]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
ARRAY_DTYPES = ["uint8", "int16", "float32", "float64"]


def _key(i: int) -> str:
    return f"r{i:03d}"


def _int_value(dtype: str, i: int) -> int:
    info = np.iinfo(np.dtype(dtype))
    return [int(info.min), int(info.max), 0, i][i % 4]


def _float_value(i: int) -> float:
    return [0.5 * i, -0.0, math.inf, -2.25, math.nan][i % 5]


def _pixels(mode: str, i: int) -> PILImage.Image:
    bands = {"I;16": 2, "P": 1}.get(mode, len(mode))  # bytes per pixel
    data = np.random.default_rng(i).integers(0, 255, 5 * 6 * bands, dtype=np.uint8).tobytes()
    image = PILImage.frombytes(mode, (6, 5), data)
    if mode == "P":
        image.putpalette([c for k in range(256) for c in (k, 255 - k, (k * 7) % 256)])
    return image


def _scalars(i: int) -> dict[str, Any]:
    null = i % 6 == 5
    row: dict[str, Any] = {"bool": None if null else i % 2 == 0}
    for dtype in INT_DTYPES:
        row[dtype] = None if null else _int_value(dtype, i)
    for dtype in FLOAT_DTYPES:
        row[dtype] = None if null else _float_value(i)
    row["string"] = None if null else f"row {i} ✓ é"
    row["large_string"] = None if null else "long " * (i % 3) + str(i)
    row["binary"] = None if null else bytes([i % 256]) * (i % 4)
    row["large_binary"] = None if null else bytes(range(i % 7))
    return row


def _labels(i: int) -> dict[str, Any]:
    return {"label": LABELS[i % 3], "flag": None if i % 7 == 6 else FLAGS[i % 2], "n": i}


def _images(i: int) -> dict[str, Any]:
    row: dict[str, Any] = {mode: None if i % 8 == 7 else _pixels(mode, i) for mode in IMAGE_MODES}
    row["label"] = LABELS[i % 3]
    row["n"] = i
    return row


def _arrays(i: int) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for dtype in ARRAY_DTYPES:
        row[f"a_{dtype}"] = None if i % 5 == 4 else np.arange(12, dtype=dtype).reshape(2, 3, 2) + i
    row["label"] = LABELS[i % 3]
    row["n"] = i
    return row


def _sequences(i: int) -> dict[str, Any]:
    null = i % 5 == 4
    return {
        "ints": None if null else list(range(i % 4)),
        "strings": None if null else [f"s{j}" for j in range(i % 3)],
        "floats": None if null else [0.5 * i, math.inf][: i % 3],
        "nested": None if null else [[j, i] for j in range(i % 3)],
        "fixed": None if null else [i, -i, 2 * i],
        "label": LABELS[i % 3],
    }


@dataclass(frozen=True)
class FeatureSet:
    """One family of feature types: its schema, a row maker, and which columns are ClassLabels / scalars."""

    name: str
    features: se.Features
    make: Any  # (i) -> row dict of what the user yields
    label_column: str | None
    scalar_column: str  # a column ``set`` writes
    scalar_value: Any  # what ``set`` writes there


FEATURE_SETS: dict[str, FeatureSet] = {
    "scalars": FeatureSet(
        "scalars",
        se.Features(
            **{"bool": se.Value("bool")},
            **{d: se.Value(d) for d in INT_DTYPES + FLOAT_DTYPES},
            string=se.Value("string"),
            large_string=se.Value("large_string"),
            binary=se.Value("binary"),
            large_binary=se.Value("large_binary"),
        ),
        _scalars,
        None,
        "int16",
        1234,
    ),
    "labels": FeatureSet(
        "labels",
        se.Features(label=se.ClassLabel(names=LABELS), flag=se.ClassLabel(names=FLAGS), n=se.Value("int64")),
        _labels,
        "label",
        "n",
        -7,
    ),
    "images": FeatureSet(
        "images",
        se.Features(
            **{mode: se.Image() for mode in IMAGE_MODES}, label=se.ClassLabel(names=LABELS), n=se.Value("int32")
        ),
        _images,
        "label",
        "n",
        -1,
    ),
    "arrays": FeatureSet(
        "arrays",
        se.Features(
            **{f"a_{d}": se.Array3D(shape=(2, 3, 2), dtype=d) for d in ARRAY_DTYPES},
            label=se.ClassLabel(names=LABELS),
            n=se.Value("int32"),
        ),
        _arrays,
        "label",
        "n",
        -1,
    ),
    "sequences": FeatureSet(
        "sequences",
        se.Features(
            ints=se.Sequence(se.Value("int64")),
            strings=se.Sequence(se.Value("string")),
            floats=se.Sequence(se.Value("float32")),
            nested=se.Sequence(se.Sequence(se.Value("int32"))),
            fixed=se.Sequence(se.Value("int16"), length=3),
            label=se.ClassLabel(names=LABELS),
        ),
        _sequences,
        "label",
        "ints",
        [9, 9],
    ),
}


def rows(name: str, indexes: list[int]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The generator every build runs: ``(key, row)`` for each index (a list, so parallel builds split it)."""
    make = FEATURE_SETS[name].make
    for i in indexes:
        yield _key(i), make(i)


def model(name: str) -> list[dict[str, Any]]:
    """The rows as a user expects to read them back: plain Python values, in build order."""
    return [{"__key__": key, **row} for key, row in rows(name, list(range(ROWS)))]


def image_bytes(image: PILImage.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
