"""Histograms and number ranges computed in numpy over the column (stable_explore.widgets._filters)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from stable_explore.widgets import _filters
from stable_explore.widgets._filters import bin_edges, bin_filter, class_counts, field_mask, histogram, value_range


@pytest.mark.parametrize("seed", range(40))
def test_each_bar_counts_exactly_the_rows_its_filter_keeps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lo, hi = sorted(rng.uniform(-1e3, 1e3, 2) * rng.choice([1e-6, 1.0, 1e9]))
    bins = int(rng.integers(1, 40))
    edges = np.asarray(bin_edges(lo, hi, bins))
    # values between the edges, on them, one step either side of them, outside the range, NaN and nulls
    values = [*rng.uniform(lo, hi, 200), *edges, *np.nextafter(edges, np.inf), *np.nextafter(edges, -np.inf)]
    values += [lo - 1, hi + 1, float("nan")]
    column = pa.chunked_array([pa.array(values[:100]), pa.array([*values[100:], None])])
    counts = histogram(column, lo=lo, hi=hi, bins=bins)
    assert len(counts) == bins
    kept = [int(field_mask(column, bin_filter("x", lo, hi, i, bins)).sum()) for i in range(bins)]
    assert counts == kept
    assert sum(counts) == int(field_mask(column, {"column": "x", "min": lo, "max": hi}).sum())


def test_a_histogram_in_slices_adds_up_over_every_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    values = pa.array(np.arange(10_000, dtype=np.int64) % 97)
    whole = histogram(values, lo=0.0, hi=96.0, bins=16)
    monkeypatch.setattr(_filters, "_PART", 333)  # 31 slices, the last short
    assert histogram(values, lo=0.0, hi=96.0, bins=16) == whole
    assert sum(whole) == 10_000


def test_a_range_of_one_value_puts_it_in_the_last_bar() -> None:
    assert histogram(pa.array([2.0, 2.0, None]), lo=2.0, hi=2.0, bins=4) == [0, 0, 0, 2]


def test_number_ranges_skip_nulls_and_nan() -> None:
    assert value_range(pa.array([float("nan"), 2.5, None, -1.0])) == (-1.0, 2.5)
    assert value_range(pa.array([None, float("nan")], pa.float64())) is None
    assert value_range(pa.array([], pa.int32())) is None
    assert value_range(pa.array(np.array([1.5, np.nan, -2], np.float16))) == (-2.0, 1.5)
    assert value_range(pa.chunked_array([[3, 9], [None, -4]], pa.int64())) == (-4.0, 9.0)


def test_class_counts_leave_out_missing_and_unknown_codes() -> None:
    codes = np.array([0, 2, -1, 2, 7, 1] * 100_000)
    assert class_counts(codes, 3) == [100_000, 100_000, 200_000]
    assert class_counts(np.zeros(0, dtype=np.int64), 2) == [0, 0]
