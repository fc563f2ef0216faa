"""Which 2D points fall in a box or a lasso (a polygon), by the same rules the embedding map's page uses.

A box keeps its edges (``x0 <= x <= x1``). A lasso uses the even-odd rule with half-open edges, so a
point exactly on a vertex is counted once; the page runs the same arithmetic on the same float32
coordinates, so both sides agree row for row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stable_explore.errors import InvalidOptionError

__all__ = ["rows_in_box", "rows_in_polygon"]

_CHUNK = 262_144


def rows_in_box(points: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Rows whose point lies inside the box (edges included), in row order.

    Examples
    --------
    >>> points = np.array([[0, 0], [1, 1], [2, 2]], dtype=np.float32)
    >>> rows_in_box(points, 0.5, 0.5, 2, 2).tolist()
    [1, 2]
    """
    xs, ys = points[:, 0].astype(np.float64), points[:, 1].astype(np.float64)
    left, right = sorted((x0, x1))
    bottom, top = sorted((y0, y1))
    return np.flatnonzero((xs >= left) & (xs <= right) & (ys >= bottom) & (ys <= top)).astype(np.int64)


def rows_in_polygon(points: np.ndarray, polygon: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Rows whose point lies inside the polygon (even-odd rule), in row order.

    Examples
    --------
    >>> points = np.array([[1, 1], [3, 1], [1, 3]], dtype=np.float32)
    >>> rows_in_polygon(points, [[0, 0], [2, 0], [2, 2], [0, 2]]).tolist()
    [0]
    """
    vertices = np.asarray(polygon, dtype=np.float64)
    if vertices.ndim != 2 or vertices.shape[1] != 2 or len(vertices) < 3:
        msg = f"a lasso needs at least 3 points [x, y]; got an array of shape {vertices.shape}"
        raise InvalidOptionError(msg)
    xs, ys = points[:, 0].astype(np.float64), points[:, 1].astype(np.float64)
    (left, bottom), (right, top) = vertices.min(axis=0), vertices.max(axis=0)
    candidates = np.flatnonzero((xs >= left) & (xs <= right) & (ys >= bottom) & (ys <= top))
    inside = np.zeros(len(candidates), dtype=bool)
    following = np.roll(vertices, -1, axis=0)
    for start in range(0, len(candidates), _CHUNK):
        chosen = candidates[start : start + _CHUNK]
        px, py = xs[chosen], ys[chosen]
        flips = np.zeros(len(chosen), dtype=bool)
        for (xi, yi), (xj, yj) in zip(vertices.tolist(), following.tolist(), strict=True):
            if yi == yj:
                continue
            crosses = (yi > py) != (yj > py)
            flips ^= crosses & (px < (xj - xi) * (py - yi) / (yj - yi) + xi)
        inside[start : start + len(chosen)] = flips
    return candidates[inside].astype(np.int64)
