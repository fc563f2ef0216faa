"""Small numpy helpers the read and write paths share.

:func:`distinct` is ``np.unique`` without its options: numpy 2.4's ``np.unique`` asks
``np.ma.is_masked`` first, and the first call in a process imports ``numpy.ma`` (20-30 ms,
more than the rest of a first read of 256 random rows).

Examples
--------
>>> distinct(np.array([3, 1, 3, 2, 1])).tolist()
[1, 2, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct"]


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a 1-d integer (or boolean) array, as ``np.unique(values)`` gives them."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    found: np.ndarray = ordered[keep]
    return found
