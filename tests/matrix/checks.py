"""What a cell asserts: values read back, made plain, equal the model's, made plain the same way."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from PIL import Image as PILImage

import stable_explore as se

if TYPE_CHECKING:
    from stable_explore.schema.base import Feature


def plain(value: Any) -> Any:
    """A value as plain Python for ``==``: lists for arrays, ``"nan"`` for NaN, ints and floats for numpy scalars."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def canon(feature: Feature, value: Any) -> Any:
    """One field's value as a comparable plain value, whatever form a read path gives it in."""
    if (
        value is None
        or value is pd.NA
        or (isinstance(value, float) and math.isnan(value) and not isinstance(feature, se.Value))
    ):
        return None
    if isinstance(feature, se.ClassLabel):
        return feature.names[int(value)] if not isinstance(value, str) else value
    if isinstance(feature, se.Image):
        if isinstance(value, dict):
            value = value["bytes"]
        image = value if isinstance(value, PILImage.Image) else PILImage.open(io.BytesIO(bytes(value)))
        palette = image.getpalette() if image.mode == "P" else None
        return (image.mode, image.size, image.tobytes(), palette)
    if isinstance(feature, se.Array3D):
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = np.frombuffer(bytes(value), dtype=feature.dtype).reshape(feature.shape)
        # nested lists (a Parquet export in the Hugging Face layout) hold the values, not their dtype
        array = np.asarray(value, dtype=feature.dtype) if isinstance(value, list) else np.asarray(value)
        return (str(array.dtype), array.shape, array.tolist())
    return plain(value)


def canon_row(features: se.Features, row: dict[str, Any]) -> dict[str, Any]:
    return {name: canon(features[name], row[name]) for name in features}


def assert_rows(
    features: se.Features, got: list[dict[str, Any]], want: list[dict[str, Any]], where: str, *, pandas: bool = False
) -> None:
    """Every field of every row equal; the message names the read path, the row and the field.

    ``pandas``: a null float reads back as NaN (pandas has no other null for float64).
    """
    assert len(got) == len(want), f"{where}: {len(got)} rows, the model has {len(want)}"
    for position, (g, w) in enumerate(zip(got, want, strict=True)):
        for name in features:
            a, b = canon(features[name], g[name]), canon(features[name], w[name])
            if pandas and b is None and a == "nan":
                a = None
            assert a == b, f"{where}: row {position} (key {w.get('__key__')!r}), field {name!r}: {a!r} != {b!r}"
