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

__all__ = ["METHODS", "check_finite", "pca", "pca_2d", "project"]

METHODS = ("pca", "umap")
# float64 rows centred at once: a few such blocks are the most pca holds beyond its result
_CHUNK_BYTES = 8 * 1024 * 1024


def _chunk_rows(width: int) -> int:
    return max(1, _CHUNK_BYTES // (8 * max(1, width)))


def check_finite(block: np.ndarray, *, first: int = 0, what: str = "the embedding") -> None:
    """Refuse rows of ``block`` (rows ``first``... of an embedding) holding a NaN or an infinity, naming them.

    Raises
    ------
    InvalidOptionError
        A ``ValueError`` naming the first rows (and how many there are), the column and the value.

    Examples
    --------
    >>> check_finite(np.array([[0.0, 1.0], [2.0, 3.0]]))
    >>> check_finite(np.array([[0.0, 1.0], [2.0, np.nan]]), first=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stable_explore.errors.InvalidOptionError: the embedding: 1 row holds a NaN or infinite value: row 11 (nan in ...
    """
    if block.dtype.kind not in "fc" or np.isfinite(block).all():
        return
    bad = np.flatnonzero(~np.isfinite(block.reshape(len(block), -1)).all(axis=1))
    named = []
    for row in bad[:5]:
        values = block[row].ravel()
        column = int(np.flatnonzero(~np.isfinite(values))[0])
        named.append(f"row {first + int(row)} ({values[column]} in column {column})")
    count = f"{len(bad):,} rows hold" if len(bad) > 1 else "1 row holds"
    more = f", and {len(bad) - 5:,} more" if len(bad) > 5 else ""
    msg = (
        f"{what}: {count} a NaN or infinite value: {', '.join(named)}{more}; an embedding must be finite: "
        f"recompute those rows, or leave them out (ds.drop(rows))"
    )
    raise InvalidOptionError(msg)


def pca(data: np.ndarray, dims: int, *, residual: bool = False) -> np.ndarray:
    """``data`` (rows x features) on its first ``dims`` principal components, as float64 (rows x dims).

    The components come from the scatter matrix, summed over chunks of rows (8 MB of them at a time),
    so memory stays bounded by the chunk whatever the number of rows; each axis's sign is fixed (its largest loading is
    positive), so the same data always gives the same coordinates. ``residual`` adds one more
    coordinate: how far each row lies off those components (the norm of what they leave out), so a
    row unlike every other (noise, a blank) stays far from the rest instead of landing near the centre.

    Examples
    --------
    >>> pca(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]), 1).ravel().round(3).tolist()
    [-1.414, 0.0, 1.414]
    """
    rows, width = data.shape
    dims = max(1, min(dims, rows, width))
    out = np.zeros((rows, dims + int(residual)))
    if rows == 0:
        return out
    step = _chunk_rows(width)
    for start in range(0, rows, step):  # by chunks: a mask of the whole matrix would double its memory
        check_finite(data[start : start + step], first=start)
    mean = data.mean(axis=0, dtype=np.float64)
    scatter = np.zeros((width, width))
    chunk = _chunk_rows(width)
    for start in range(0, rows, chunk):
        block = data[start : start + chunk] - mean
        scatter += block.T @ block
    values, vectors = np.linalg.eigh(scatter)
    axes = vectors[:, np.argsort(values)[::-1][:dims]]
    for column in range(axes.shape[1]):  # a fixed sign per axis: the same data always draws the same way
        if axes[np.argmax(np.abs(axes[:, column])), column] < 0:
            axes[:, column] = -axes[:, column]
    for start in range(0, rows, chunk):
        block = data[start : start + chunk] - mean
        projected = block @ axes
        out[start : start + len(block), :dims] = projected
        if residual:
            out[start : start + len(block), dims] = np.linalg.norm(block - projected @ axes.T, axis=1)
    return out


def pca_2d(matrix: np.ndarray) -> np.ndarray:
    """The first two principal components of ``matrix`` (rows x dimensions), as float32 (rows x 2).

    Rows are centred; a matrix of one dimension gives a second axis of zeros. See :func:`pca`.

    Examples
    --------
    >>> points = pca_2d(np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [4.0, 0.1, 1.0]]))
    >>> points.dtype, points.shape, [round(float(x), 2) + 0.0 for x in points[:, 0]]
    (dtype('float32'), (3, 2), [-2.0, 0.0, 2.0])
    """
    out = np.zeros((len(matrix), 2), dtype=np.float32)
    projected = pca(matrix, 2)
    out[:, : projected.shape[1]] = projected
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
    step = _chunk_rows(matrix.shape[1] if matrix.ndim == 2 else 1)
    for start in range(0, len(matrix), step):  # UMAP's own refusal of a NaN names no row
        check_finite(matrix[start : start + step], first=start)
    umap = require("umap", "embed", "a UMAP projection")
    neighbours = min(int(options.pop("n_neighbors", 15)), len(matrix) - 1)
    reducer = umap.UMAP(n_components=2, random_state=seed, n_neighbors=neighbours, **options)
    with warnings.catch_warnings():  # a seed makes UMAP run on one thread, and it warns about that each time
        warnings.filterwarnings("ignore", message="n_jobs value", category=UserWarning)
        return np.asarray(reducer.fit_transform(matrix), dtype=np.float32)
