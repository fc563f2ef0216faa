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

__all__ = [
    "HISTOGRAM_BINS",
    "bin_edges",
    "bin_filter",
    "describe_filter",
    "field_kinds",
    "field_mask",
    "histogram",
    "make_filter",
    "sort_order",
]

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
    below: float | None = None,
) -> dict[str, Any]:
    """A checked filter dict: a range for numbers, ``equals`` for numbers and strings, ``contains`` for strings.

    ``min`` and ``max`` are inclusive; ``below`` is an exclusive upper bound (a histogram's bin).
    """
    if column not in kinds:
        msg = f"no column {column!r} to filter by value; the number and string columns are {sorted(kinds)}"
        raise ColumnNotFoundError(msg)
    kind = kinds[column]
    if kind == "string" and (min is not None or max is not None or below is not None):
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
    if below is not None:
        spec["below"] = float(below)
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
    if "below" in spec:
        keep = pc.and_(keep, pc.less(column, pa.scalar(spec["below"])))
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


def bin_edges(lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> list[float]:
    """The ``bins + 1`` edges of equal bins over [lo, hi]; the one list both the counts and a bin's filter use."""
    if not hi > lo:
        return [lo] * bins + [hi]  # one value: every bin but the last is empty, the last holds it
    edges = [lo + (hi - lo) * i / bins for i in range(bins)]
    return [*edges, hi]


def histogram(column: pa.Array | pa.ChunkedArray, *, lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> list[int]:
    """Counts of ``column`` in ``bins`` equal bins over [lo, hi] (nulls and NaN skipped).

    Bins are half-open, ``[edge, next edge)``, the last closed: exactly the rows :func:`bin_filter` keeps.
    """
    valid = pc.drop_null(pc.cast(column, pa.float64(), safe=False))
    valid = pc.filter(valid, pc.invert(pc.is_nan(valid)))
    if len(valid) == 0:
        return [0] * bins
    edges = np.asarray(bin_edges(lo, hi, bins), dtype=np.float64)
    values = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=np.float64)
    inside = values[(values >= edges[0]) & (values <= edges[-1])]
    index = np.searchsorted(edges, inside, side="right") - 1  # edges[i] <= v < edges[i + 1]
    index[inside == edges[-1]] = bins - 1  # the last bin is closed
    counts = np.bincount(np.minimum(index, bins - 1), minlength=bins)
    return [int(c) for c in counts[:bins]]


def bin_filter(column: str, lo: float, hi: float, index: int, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """The filter a click on bin ``index`` makes: ``edge <= value < next edge`` (the last bin: ``<=``).

    Examples
    --------
    >>> bin_filter("x", 0.0, 8.0, 1, bins=4)
    {'column': 'x', 'min': 2.0, 'below': 4.0}
    >>> bin_filter("x", 0.0, 8.0, 3, bins=4)
    {'column': 'x', 'min': 6.0, 'max': 8.0}
    """
    if not 0 <= index < bins:
        msg = f"histogram of {column!r} has bins 0 to {bins - 1}, not {index}"
        raise InvalidOptionError(msg)
    edges = bin_edges(lo, hi, bins)
    if index == bins - 1:
        return {"column": column, "min": edges[index], "max": edges[index + 1]}
    return {"column": column, "min": edges[index], "below": edges[index + 1]}


def describe_filter(spec: dict[str, Any]) -> str:
    """One filter in words, as its chip shows it: ``"score 2 to 4"``, ``"name contains “n3”"``.

    Examples
    --------
    >>> describe_filter({"column": "x", "min": 2.0, "below": 4.0})
    'x 2 to <4'
    """
    column = spec.get("column", "")

    def number(value: float) -> str:
        return f"{value:.4g}"

    parts = []
    if "min" in spec and "below" in spec:
        parts.append(f"{number(spec['min'])} to <{number(spec['below'])}")
    elif "min" in spec and "max" in spec:
        parts.append(f"{number(spec['min'])} to {number(spec['max'])}")
    elif "min" in spec:
        parts.append(f"≥ {number(spec['min'])}")
    elif "max" in spec:
        parts.append(f"≤ {number(spec['max'])}")
    elif "below" in spec:
        parts.append(f"< {number(spec['below'])}")
    if "equals" in spec:
        parts.append(f"= {spec['equals']}")
    if "contains" in spec:
        parts.append(f"contains “{spec['contains']}”")
    return f"{column} {', '.join(parts)}"


def value_range(column: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """(min, max) of a numeric column, NaN and nulls skipped; None when it holds no number."""
    values = pc.cast(column, pa.float64(), safe=False)  # unsafe: a 64-bit int past 2**53 rounds
    values = pc.filter(values, pc.invert(pc.fill_null(pc.is_nan(values), True)))
    if len(values) == 0:
        return None
    bounds = pc.min_max(values)
    return float(bounds["min"].as_py()), float(bounds["max"].as_py())
