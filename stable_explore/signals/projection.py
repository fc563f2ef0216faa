"""A 2D projection of an embedding, for the embedding map: PCA in numpy, or UMAP with the ``embed`` extra.

PCA is exact, deterministic (each axis's sign is fixed: its largest loading is positive) and runs in
bounded memory over chunks of rows, so a million rows of a 512-dimensional embedding project in
seconds. UMAP keeps neighbourhoods better on curved data but is slower and needs ``umap-learn``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from stable_explore._optional import require
from stable_explore.errors import InvalidOptionError

__all__ = ["METHODS", "pca_2d", "project"]

METHODS = ("pca", "umap")
_CHUNK = 65_536


def pca_2d(matrix: np.ndarray) -> np.ndarray:
    """The first two principal components of ``matrix`` (rows x dimensions), as float32 (rows x 2).

    Rows are centred; a matrix of one dimension gives a second axis of zeros.

    Examples
    --------
    >>> points = pca_2d(np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [4.0, 0.1, 1.0]]))
    >>> points.dtype, points.shape, [round(float(x), 2) + 0.0 for x in points[:, 0]]
    (dtype('float32'), (3, 2), [-2.0, 0.0, 2.0])
    """
    rows, dims = matrix.shape
    out = np.zeros((rows, 2), dtype=np.float32)
    if rows == 0:
        return out
    mean = matrix.mean(axis=0)
    scatter = np.zeros((dims, dims))
    for start in range(0, rows, _CHUNK):
        block = matrix[start : start + _CHUNK] - mean
        scatter += block.T @ block
    values, vectors = np.linalg.eigh(scatter)
    order = np.argsort(values)[::-1][:2]
    axes = vectors[:, order]
    for column in range(axes.shape[1]):  # a fixed sign per axis: the same data always draws the same way
        if axes[np.argmax(np.abs(axes[:, column])), column] < 0:
            axes[:, column] = -axes[:, column]
    for start in range(0, rows, _CHUNK):
        out[start : start + _CHUNK, : axes.shape[1]] = (matrix[start : start + _CHUNK] - mean) @ axes
    return out


def project(matrix: np.ndarray, method: str = "pca", *, seed: int = 0, **options: Any) -> np.ndarray:
    """Project an embedding (rows x dimensions) to 2D points (rows x 2, float32).

    Parameters
    ----------
    matrix:
        The embedding, one row per row of the dataset (see :func:`embedding_matrix`).
    method:
        ``"pca"`` (default, numpy only) or ``"umap"`` (needs ``pip install 'stable-explore[embed]'``).
    seed:
        UMAP's random state, so the same data draws the same map. PCA needs none.
    **options:
        Passed to ``umap.UMAP`` (``n_neighbors``, ``min_dist``, ``metric``, ...).

    Returns
    -------
    numpy.ndarray
        float32, shape (rows, 2).

    Notes
    -----
    UMAP needs ``umap-learn`` (the ``embed`` extra); it takes minutes at a million rows where PCA
    takes seconds.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> project(rng.normal(size=(100, 8))).shape
    (100, 2)
    """
    if method not in METHODS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise InvalidOptionError(msg)
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        msg = f"an embedding is a matrix of rows x dimensions; got shape {matrix.shape}"
        raise InvalidOptionError(msg)
    if method == "pca" or len(matrix) < 4:
        return pca_2d(matrix)
    umap = require("umap", "embed", "a UMAP projection")
    neighbours = min(int(options.pop("n_neighbors", 15)), len(matrix) - 1)
    reducer = umap.UMAP(n_components=2, random_state=seed, n_neighbors=neighbours, **options)
    with warnings.catch_warnings():  # a seed makes UMAP run on one thread, and it warns about that each time
        warnings.filterwarnings("ignore", message="n_jobs value", category=UserWarning)
        return np.asarray(reducer.fit_transform(matrix), dtype=np.float32)
