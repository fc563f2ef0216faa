"""Rows in a box or a lasso: the even-odd rule on float32 points, checked against a brute-force count of crossings."""

from __future__ import annotations

import numpy as np
import pytest

from stable_explore.errors import InvalidOptionError
from stable_explore.signals import rows_in_box, rows_in_polygon


def test_box_keeps_its_edges_and_any_corner_order() -> None:
    points = np.array([[0, 0], [1, 1], [2, 2], [1, 3]], dtype=np.float32)
    assert rows_in_box(points, 0, 0, 1, 1).tolist() == [0, 1]
    assert rows_in_box(points, 2, 3, 0.5, 0.5).tolist() == [1, 2, 3]


def test_lasso_agrees_with_a_brute_force_even_odd_count() -> None:
    rng = np.random.default_rng(3)
    points = rng.uniform(-1, 1, size=(20_000, 2)).astype(np.float32)
    angles = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    radius = 0.5 + 0.3 * np.sin(5 * angles)  # a star: concave, like a hand-drawn lasso
    star = np.column_stack([radius * np.cos(angles), radius * np.sin(angles)])
    found = rows_in_polygon(points, star)
    # brute force: a ray to +x from each point crosses an odd number of edges
    xs, ys = points[:, 0].astype(float), points[:, 1].astype(float)
    crossings = np.zeros(len(points), dtype=int)
    for (x0, y0), (x1, y1) in zip(star, np.roll(star, -1, axis=0), strict=True):
        t = (ys - y0) / (y1 - y0)
        crossings += ((y0 > ys) != (y1 > ys)) & (xs < x0 + t * (x1 - x0))
    assert found.tolist() == np.flatnonzero(crossings % 2 == 1).tolist()
    assert 0.2 < len(found) / len(points) < 0.5  # the star covers about a third of the square


def test_a_lasso_needs_three_points() -> None:
    with pytest.raises(InvalidOptionError, match=r"at least 3 points \[x, y\]; got an array of shape \(2, 2\)"):
        rows_in_polygon(np.zeros((3, 2), dtype=np.float32), [[0, 0], [1, 1]])
