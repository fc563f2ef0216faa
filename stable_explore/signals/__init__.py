"""Signals: computed aids that find rows worth a look (numpy first; optional extras imported inside functions).

The embedding map's part: a 2D projection of an embedding (:func:`project`), the rows in a box or lasso
(:func:`rows_in_box`, :func:`rows_in_polygon`) and similar rows by embedding or perceptual hash
(:func:`similar_rows`).
"""

from __future__ import annotations

from stable_explore.signals._vectors import Embedding, embedding_matrix
from stable_explore.signals.projection import pca_2d, project
from stable_explore.signals.regions import rows_in_box, rows_in_polygon
from stable_explore.signals.similar import hamming_distances, nearest_rows, similar_rows

__all__ = [
    "Embedding",
    "embedding_matrix",
    "project",
    "pca_2d",
    "rows_in_box",
    "rows_in_polygon",
    "similar_rows",
    "nearest_rows",
    "hamming_distances",
]
