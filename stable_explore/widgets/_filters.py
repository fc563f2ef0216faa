"""Field filters, sorting and histograms of the shard browser, computed in Arrow over whole columns.

A filter is a plain dict, as it is synced to the page: ``{"column": "score", "min": 1, "max": 5}``,
``{"column": "name", "equals": "rex"}`` or ``{"column": "name", "contains": "re"}``.

Examples
--------
>>> import pyarrow as pa
>>> column = pa.array([1.0, 5.0, None, 3.0])
>>> field_mask(column, {"column": "x", "min": 2}).tolist()
[False, True, False, True]
>>> histogram(column, lo=1.0, hi=5.0, bins=4)
[1, 0, 1, 1]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.schema import Features, Value

__all__ = ["HISTOGRAM_BINS", "field_kinds", "field_mask", "histogram", "make_filter", "sort_order"]

HISTOGRAM_BINS = 16
_NUMERIC_PREFIXES = ("int", "uint", "float", "double", "half")
_STRING_TYPES = ("string", "large_string")


def field_kinds(features: Features) -> dict[str, str]:
    """``{column: "number" | "string"}`` for the columns that can be filtered and sorted by value."""
    kinds = {}
    for name, feature in features.items():
        if isinstance(feature, Value):
            if feature.dtype in _STRING_TYPES:
                kinds[name] = "string"
            elif feature.dtype.startswith(_NUMERIC_PREFIXES):
                kinds[name] = "number"
    return kinds


def make_filter(
    kinds: dict[str, str],
    column: str,
    *,
    min: float | None = None,
    max: float | None = None,
    equals: Any = None,
    contains: str | None = None,
) -> dict[str, Any]:
    """A checked filter dict: a range for numbers, ``equals`` for numbers and strings, ``contains`` for strings."""
    if column not in kinds:
        msg = f"no column {column!r} to filter by value; the number and string columns are {sorted(kinds)}"
        raise ColumnNotFoundError(msg)
    kind = kinds[column]
    if kind == "string" and (min is not None or max is not None):
        msg = f"{column!r} is a string column: filter it with equals= or contains=, not min=/max="
        raise InvalidOptionError(msg)
    if kind == "number" and contains is not None:
        msg = f"{column!r} is a number column: filter it with min=/max= or equals=, not contains="
        raise InvalidOptionError(msg)
    spec: dict[str, Any] = {"column": column}
    if min is not None:
        spec["min"] = float(min)
    if max is not None:
        spec["max"] = float(max)
    if equals is not None:
        spec["equals"] = float(equals) if kind == "number" else str(equals)
    if contains is not None and str(contains) != "":
        spec["contains"] = str(contains)
    if len(spec) == 1:
        msg = f"a filter on {column!r} needs min=, max=, equals= or contains="
        raise InvalidOptionError(msg)
    return spec


def field_mask(column: pa.Array | pa.ChunkedArray, spec: dict[str, Any]) -> np.ndarray:
    """Which values pass one filter (nulls never pass)."""
    keep = pa.scalar(True)
    if "min" in spec:
        keep = pc.and_(keep, pc.greater_equal(column, pa.scalar(spec["min"])))
    if "max" in spec:
        keep = pc.and_(keep, pc.less_equal(column, pa.scalar(spec["max"])))
    if "equals" in spec:
        keep = pc.and_(keep, pc.equal(column, pa.scalar(spec["equals"])))
    if "contains" in spec:
        keep = pc.and_(keep, pc.match_substring(column, spec["contains"], ignore_case=True))
    if isinstance(keep, pa.Scalar):  # no condition: every non-null value passes
        keep = pc.is_valid(column)
    mask: np.ndarray = np.asarray(pc.fill_null(keep, False).to_numpy(zero_copy_only=False), dtype=bool)
    return mask


def sort_order(column: pa.Array | pa.ChunkedArray, *, descending: bool = False) -> np.ndarray:
    """Positions that sort ``column`` (stable; nulls last)."""
    order = pc.sort_indices(column, sort_keys=[("x", "descending" if descending else "ascending")])  # nulls last
    positions: np.ndarray = order.to_numpy()
    return positions


def histogram(column: pa.Array | pa.ChunkedArray, *, lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> list[int]:
    """Counts of ``column`` in ``bins`` equal bins over [lo, hi] (nulls and NaN skipped)."""
    valid = pc.drop_null(pc.cast(column, pa.float64(), safe=False))
    valid = pc.filter(valid, pc.invert(pc.is_nan(valid)))
    if len(valid) == 0:
        return [0] * bins
    width = (hi - lo) / bins if hi > lo else 1.0
    index = pc.floor(pc.divide(pc.subtract(valid, pa.scalar(lo)), pa.scalar(width)))
    index = pc.max_element_wise(pc.min_element_wise(index, pa.scalar(float(bins - 1))), pa.scalar(0.0))
    counts = np.bincount(np.asarray(index.to_numpy(zero_copy_only=False), dtype=np.int64), minlength=bins)
    return [int(c) for c in counts[:bins]]


def value_range(column: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """(min, max) of a numeric column, NaN and nulls skipped; None when it holds no number."""
    values = pc.cast(column, pa.float64(), safe=False)  # unsafe: a 64-bit int past 2**53 rounds
    values = pc.filter(values, pc.invert(pc.fill_null(pc.is_nan(values), True)))
    if len(values) == 0:
        return None
    bounds = pc.min_max(values)
    return float(bounds["min"].as_py()), float(bounds["max"].as_py())
