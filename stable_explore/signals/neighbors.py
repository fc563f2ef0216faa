"""Nearest neighbours in an embedding, and the outlier score they give: the mean distance to the k nearest."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import numpy as np

from stable_explore.errors import InvalidOptionError
from stable_explore.signals._rows import result_table
from stable_explore.signals.embeddings import EmbeddingSource, embeddings_of

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.dataset import CachedDataset

_BLOCK = 1024  # rows whose distances to every row are held at once (numpy fallback)


def _check_k(k: int, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"k must be a positive int, got {k!r}"
        raise InvalidOptionError(msg)
    return min(k, max(0, n - 1))


def nearest_neighbors(vectors: np.ndarray, k: int, *, backend: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """(distances, positions) of each row's ``k`` nearest other rows (Euclidean), nearest first.

    ``backend``: ``"sklearn"`` (scikit-learn's NearestNeighbors), ``"numpy"`` (exact, in blocks of rows
    against all rows: O(n^2 d) work, bounded memory) or ``"auto"`` (scikit-learn when installed).

    Examples
    --------
    >>> import numpy as np
    >>> distances, positions = nearest_neighbors(np.array([[0.0], [1.0], [5.0]]), 1, backend="numpy")
    >>> positions.ravel().tolist(), distances.ravel().tolist()
    ([1, 0, 1], [1.0, 1.0, 4.0])
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    k = _check_k(k, n)
    if k == 0:
        return np.zeros((n, 0), dtype=np.float32), np.zeros((n, 0), dtype=np.int64)
    if backend not in ("auto", "sklearn", "numpy"):
        msg = f"backend must be 'auto', 'sklearn' or 'numpy', got {backend!r}"
        raise InvalidOptionError(msg)
    if backend == "sklearn" or (backend == "auto" and importlib.util.find_spec("sklearn") is not None):
        return _sklearn(vectors, k)
    return _blocked(vectors, k)


def _sklearn(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    from stable_explore._optional import require

    neighbors = require("sklearn.neighbors", "clean", "nearest neighbours with scikit-learn")
    model = neighbors.NearestNeighbors(n_neighbors=k + 1).fit(vectors)
    distances, positions = model.kneighbors(vectors)
    return _drop_self(distances, positions, k)


def _drop_self(distances: np.ndarray, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's neighbours without itself (a row that ties with copies may not come first)."""
    own = positions == np.arange(len(positions))[:, None]
    own[~own.any(axis=1), -1] = True  # itself not among the k + 1: drop the farthest
    keep = ~own
    shape = (len(positions), k)
    return distances[keep].reshape(shape).astype(np.float32), positions[keep].reshape(shape).astype(np.int64)


def _blocked(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(vectors)
    squares = np.einsum("ij,ij->i", vectors, vectors)
    distances = np.zeros((n, k), dtype=np.float32)
    positions = np.zeros((n, k), dtype=np.int64)
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        block = squares[start:stop, None] + squares[None, :] - 2 * (vectors[start:stop] @ vectors.T)
        block[np.arange(stop - start), np.arange(start, stop)] = np.inf
        nearest = np.argpartition(block, k - 1, axis=1)[:, :k]
        near = np.take_along_axis(block, nearest, axis=1)
        order = np.lexsort((nearest, near), axis=1)
        positions[start:stop] = np.take_along_axis(nearest, order, axis=1)
        distances[start:stop] = np.sqrt(np.maximum(np.take_along_axis(near, order, axis=1), 0))
    return distances, positions


def embedding_outliers(
    ds: CachedDataset, embeddings: EmbeddingSource = None, *, k: int = 10, column: str | None = None
) -> pa.Table:
    """How far each row lies from its ``k`` nearest neighbours in an embedding (high: an outlier).

    Parameters
    ----------
    ds
        The dataset (or a view).
    embeddings
        A column name, an array (one row per row), a function of a batch of PIL images, or None for
        the offline :func:`~stable_explore.signals.pixel_embeddings`.
    k
        Neighbours averaged.
    column
        The image column a function or the fallback reads.

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``outlier_score`` (mean distance to the k nearest) and ``outlier_rank``
        (1: the farthest), in row order.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import embedding_outliers
    >>> rows = [{"x": float(v)} for v in (0, 1, 2, 3, 50)]
    >>> ds = se.build(rows, se.Features(x=se.Value("float64")), name="o", home=tempfile.mkdtemp(), progress=False)
    >>> table = embedding_outliers(ds, np.array([[0.0], [1.0], [2.0], [3.0], [50.0]]), k=2)
    >>> table.column("outlier_rank").to_pylist()
    [2, 4, 5, 3, 1]
    """
    vectors = embeddings_of(ds, embeddings, column=column)
    distances, _ = nearest_neighbors(vectors, k)
    scores = distances.mean(axis=1) if distances.shape[1] else np.zeros(len(vectors))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[np.lexsort((np.arange(len(scores)), -scores))] = np.arange(1, len(scores) + 1)
    return result_table(ds, np.arange(len(ds)), {"outlier_score": scores.astype(np.float64), "outlier_rank": ranks})
