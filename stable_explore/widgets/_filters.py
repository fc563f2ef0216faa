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
    "box_mask",
    "class_counts",
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


BOX_CONDITIONS = (
    "class",
    "min_area",
    "max_area",
    "min_aspect",
    "max_aspect",
    "min_score",
    "max_score",
    "min_count",
    "max_count",
)


def box_mask(column: pa.Array | pa.ChunkedArray, spec: dict[str, Any], box_format: str = "xywh") -> np.ndarray:
    """Which rows of a ``Boxes`` column have boxes that pass one box filter.

    A box passes when it is of ``class`` (an index), its area (width x height, in the stored units: px²,
    or a fraction of the image for normalized boxes) is within ``min_area``/``max_area``, its aspect
    (width / height, in the stored units) within ``min_aspect``/``max_aspect``, and its
    score within ``min_score``/``max_score`` (a box without a score passes no score condition). A row
    passes when it has at least ``min_count`` (default 1, or 0 with a ``max_count``) and at most
    ``max_count`` such boxes: so ``max_count=0`` alone keeps the images without boxes.

    Examples
    --------
    >>> from stable_explore.schema import Boxes
    >>> boxes = Boxes(names=["cat", "dog"])
    >>> rows = [[{"bbox": [0, 0, 4, 4], "category": "dog"}], [{"bbox": [0, 0, 40, 40], "category": "dog"}], []]
    >>> column = pa.array([boxes.encode_value(r) for r in rows], type=boxes.arrow_type)
    >>> box_mask(column, {"class": 1, "max_area": 100}).tolist()
    [True, False, False]
    >>> box_mask(column, {"max_count": 0}).tolist()
    [False, False, True]
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = np.zeros(sum(len(c) for c in chunks), dtype=bool)
    start = 0
    for chunk in chunks:
        out[start : start + len(chunk)] = _box_rows(chunk, spec, box_format)
        start += len(chunk)
    return out


def _box_rows(column: pa.Array, spec: dict[str, Any], box_format: str) -> np.ndarray:
    boxes = pc.list_flatten(column)
    parents = np.asarray(pc.list_parent_indices(column).to_numpy(zero_copy_only=False), dtype=np.int64)
    keep = np.ones(len(boxes), dtype=bool)
    if "class" in spec:
        classes = np.asarray(boxes.field("category").to_numpy(zero_copy_only=False), dtype=np.int64)
        keep &= classes == int(spec["class"])
    if any(f"{m}_{n}" in spec for m in ("min", "max") for n in ("area", "aspect")):
        width, height = box_sizes(boxes, box_format)
        area = width * height
        with np.errstate(divide="ignore", invalid="ignore"):
            aspect = width / height
        for name, values in (("area", area), ("aspect", aspect)):
            if f"min_{name}" in spec:
                keep &= values >= float(spec[f"min_{name}"])
            if f"max_{name}" in spec:
                keep &= values <= float(spec[f"max_{name}"])
    if "min_score" in spec or "max_score" in spec:
        scores = _floats(boxes.field("score")) if len(boxes) else np.zeros(0)
        if "min_score" in spec:
            keep &= scores >= float(spec["min_score"])  # NaN (no score) compares False
        if "max_score" in spec:
            keep &= scores <= float(spec["max_score"])
    counts = np.bincount(parents[keep], minlength=len(column))[: len(column)]
    passed = counts >= int(spec.get("min_count", 0 if "max_count" in spec else 1))
    if "max_count" in spec:
        passed &= counts <= int(spec["max_count"])
    return passed


def box_sizes(boxes: pa.Array, box_format: str) -> tuple[np.ndarray, np.ndarray]:
    """The width and height of each box of a flat array of stored boxes (the stored units)."""
    flat = pc.list_flatten(boxes.field("bbox")) if len(boxes) else pa.array([], pa.float32())
    coords = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, 4)
    if box_format == "xyxy":
        return coords[:, 2] - coords[:, 0], coords[:, 3] - coords[:, 1]
    return coords[:, 2], coords[:, 3]  # xywh and cxcywh end with the width and height


def sort_order(column: pa.Array | pa.ChunkedArray, *, descending: bool = False) -> np.ndarray:
    """Positions that sort ``column`` (stable; nulls last)."""
    order = pc.sort_indices(column, sort_keys=[("x", "descending" if descending else "ascending")])  # nulls last
    positions: np.ndarray = order.to_numpy()
    return positions


def bin_edges(lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> list[float]:
    """The ``bins + 1`` edges of equal bins over [lo, hi]; the one list both the counts and a bin's filter use."""
    if not hi > lo:
        return [lo] * bins + [hi]  # one value: every bin but the last is empty, the last holds it
    if not np.isfinite(hi - lo):  # an infinite value: no equal bins to speak of
        return [*(lo + (hi - lo) * i / bins for i in range(bins)), hi]
    edges: list[float] = np.linspace(lo, hi, bins + 1).tolist()  # numpy's histogram bins these very edges
    return edges


def histogram(column: pa.Array | pa.ChunkedArray, *, lo: float, hi: float, bins: int = HISTOGRAM_BINS) -> list[int]:
    """Counts of ``column`` in ``bins`` equal bins over [lo, hi] (nulls and NaN skipped).

    Bins are half-open, ``[edge, next edge)``, the last closed: exactly the rows :func:`bin_filter` keeps.
    Computed with numpy's histogram of equal bins (whose edges are :func:`bin_edges`'), a slice of
    the column at a time: no Python object per value, no array of the whole column.
    """
    edges = np.asarray(bin_edges(lo, hi, bins), dtype=np.float64)
    counts = np.zeros(bins, dtype=np.int64)
    for part in _parts(column):
        counts += _bin_counts(_floats(part), edges)
    return [int(c) for c in counts]


def _bin_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """How many of ``values`` fall in each bin between ``edges`` (half-open, the last closed; NaN in none)."""
    bins = len(edges) - 1
    lo, hi = float(edges[0]), float(edges[-1])
    if hi > lo and np.isfinite(hi - lo):
        counted, used = np.histogram(values, bins=bins, range=(lo, hi))
        if np.array_equal(used, edges):  # numpy's equal bins are ours: it counts what each bin's filter keeps
            found: np.ndarray = counted
            return found
    inside = values[(values >= lo) & (values <= hi)]  # NaN compares False
    index = np.searchsorted(edges, inside, side="right") - 1  # edges[i] <= v < edges[i + 1]
    index[inside == hi] = bins - 1  # the last bin is closed (and holds the one value of a range of one)
    counts: np.ndarray = np.bincount(np.clip(index, 0, bins - 1), minlength=bins)[:bins]
    return counts


_PART = 1 << 18  # values per slice: small enough to stay in cache, large enough that numpy's calls are few


def _parts(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The column as zero-copy slices of at most ``_PART`` values (page faults on one fresh 80 MB array cost more)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [chunk.slice(start, _PART) for chunk in chunks for start in range(0, len(chunk), _PART)]


def _floats(column: pa.Array) -> np.ndarray:
    """A number column as float64 numpy, nulls as NaN: no Python object per value."""
    values = pc.cast(column, pa.float64(), safe=False)  # unsafe: a 64-bit int past 2**53 rounds
    if values.null_count:
        values = pc.fill_null(values, pa.scalar(np.nan, pa.float64()))
    found: np.ndarray = values.to_numpy(zero_copy_only=False)
    return found


def class_counts(codes: np.ndarray, classes: int) -> list[int]:
    """Rows per class code ``0 .. classes - 1`` (codes outside, -1 for a missing label, are not counted).

    Examples
    --------
    >>> class_counts(np.array([0, 2, -1, 2, 7]), 3)
    [1, 0, 2]
    """
    counts = np.zeros(classes, dtype=np.int64)
    for start in range(0, len(codes), _PART):
        part = codes[start : start + _PART]
        counts += np.bincount(part[(part >= 0) & (part < classes)], minlength=classes)[:classes]
    return [int(c) for c in counts]


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

    if spec.get("boxes"):
        return f"{column}: {describe_boxes(spec)}"

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


def describe_boxes(spec: dict[str, Any]) -> str:
    """A box filter in words: ``"a box of dog, area ≤ 100, score ≥ 0.5"``, ``"no box"``.

    Examples
    --------
    >>> describe_boxes({"class": 1, "class_name": "dog", "max_area": 100.0})
    'a box of dog, area ≤ 100'
    >>> describe_boxes({"max_count": 0})
    'no box'
    """
    parts = []
    hi = spec.get("max_count")
    lo = spec.get("min_count", 0 if hi is not None else 1)
    if hi == 0:
        head = "no box"
    elif hi is None:
        head = "a box" if lo == 1 else f"{lo}+ boxes"
    else:
        head = f"at most {hi} boxes" if lo == 0 else f"{lo} to {hi} boxes"
    if "class" in spec:
        head += f" of {spec.get('class_name', spec['class'])}"
    parts.append(head)
    for name, word in (("area", "area"), ("aspect", "aspect"), ("score", "score")):
        low, high = spec.get(f"min_{name}"), spec.get(f"max_{name}")
        if low is not None and high is not None:
            parts.append(f"{word} {low:.4g} to {high:.4g}")
        elif low is not None:
            parts.append(f"{word} ≥ {low:.4g}")
        elif high is not None:
            parts.append(f"{word} ≤ {high:.4g}")
    return ", ".join(parts)


def value_range(column: pa.Array | pa.ChunkedArray) -> tuple[float, float] | None:
    """(min, max) of a numeric column, NaN and nulls skipped; None when it holds no number.

    Examples
    --------
    >>> value_range(pa.array([float("nan"), 2.5, None, -1.0]))
    (-1.0, 2.5)
    >>> value_range(pa.array([None, float("nan")])) is None
    True
    """
    if len(column) == 0:
        return None
    if pa.types.is_float16(column.type):  # Arrow's min_max has no half-float kernel
        column = pc.cast(column, pa.float64())
    bounds = pc.min_max(column)  # Arrow skips nulls and NaN (NaN only when every value is NaN)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or high is None or low != low:  # no value, or NaN only
        return None
    return float(low), float(high)  # a 64-bit int past 2**53 rounds
