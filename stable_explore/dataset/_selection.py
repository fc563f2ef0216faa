"""Row selection for views: slices, lists, arrays and boolean masks over a dataset -> row numbers of its version.

A view keeps its rows as a ``range`` while it can (slices of slices stay ranges, so a view of
a billion rows costs nothing) and as an int64 array otherwise.

Examples
--------
>>> select_rows(range(10), slice(2, 8, 2))
range(2, 8, 2)
>>> select_rows(range(2, 8, 2), [-1, 0]).tolist()
[6, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stable_explore.errors import InvalidArgumentTypeError, RowIndexError

__all__ = ["Rows", "position_of", "select_rows"]

Rows = range | np.ndarray


def position_of(index: Any, n: int) -> int:
    """A row position in ``[0, n)`` from an int that may count from the end; else :class:`RowIndexError`."""
    position = int(index)
    if position < 0:
        position += n
    if not 0 <= position < n:
        msg = f"row {int(index)} is out of range for a dataset of {n} rows"
        raise RowIndexError(msg)
    return position


def select_rows(current: Rows, selection: object) -> Rows:
    """The rows of ``current`` that a slice, list, array or boolean mask over it picks, in that order."""
    n = len(current)
    if isinstance(selection, slice):
        return current[selection]
    if isinstance(selection, range):
        selection = np.asarray(selection, dtype=np.int64)
    array = np.asarray(selection)
    if array.dtype == bool:
        if array.shape != (n,):
            msg = f"a boolean mask must have one entry per row ({n}), got shape {array.shape}"
            raise RowIndexError(msg)
        positions = np.flatnonzero(array)
    elif array.size == 0:
        positions = np.zeros(0, dtype=np.int64)
    elif array.dtype.kind in "iu":
        positions = array.astype(np.int64).reshape(-1)
        if positions.size and (positions.min() < -n or positions.max() >= n):
            bad = positions[(positions < -n) | (positions >= n)][0]
            msg = f"row {int(bad)} is out of range for a dataset of {n} rows"
            raise RowIndexError(msg)
        positions = np.where(positions < 0, positions + n, positions)
    else:
        msg = f"rows must be selected with ints, a slice, or a boolean mask, got {array.dtype} values"
        raise InvalidArgumentTypeError(msg)
    if isinstance(current, range):
        selected: np.ndarray = current.start + positions * current.step
        return selected
    picked: np.ndarray = current[positions]
    return picked
