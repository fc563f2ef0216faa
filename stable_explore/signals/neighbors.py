"""Nearest neighbours in an embedding, and the outlier score they give: the mean distance to the k nearest.

:func:`nearest_neighbors` answers for every row (or for some rows) at once; :func:`nearest_rows` for
one. Both scan in blocks (queries x rows held at once stay bounded), need no index, and break ties by
the lower row, so answers are stable.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from typing import TYPE_CHECKING

import numpy as np

from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.signals._rows import result_table
from stable_explore.signals.embeddings import Embedding, embedding_matrix
from stable_explore.signals.projection import check_finite

if TYPE_CHECKING:
    from concurrent.futures import Executor

    import pyarrow as pa

    from stable_explore.dataset import CachedDataset

__all__ = ["APPROXIMATE_ROWS", "BACKENDS", "METRICS", "embedding_outliers", "nearest_neighbors", "nearest_rows"]

BACKENDS = ("auto", "sklearn", "numpy", "pynndescent")
APPROXIMATE_ROWS = 50_000
"""Rows above which ``backend="auto"`` answers every row with approximate neighbours (pynndescent, when installed).

Exact neighbours of every row cost rows x rows distances: a million rows cost 100 times what 100k do.
At 100k rows of a 32-dimensional embedding (``benchmarks/bench_signals.py --only knn``, a loaded
2-core machine) scikit-learn's exact answer took 142.6 s and pynndescent's 8.5 s, with recall@10 0.999
and the same median outlier score; its cost grows about as rows x log(rows). At 1M rows of
:func:`~stable_explore.signals.pixel_embeddings` (``benchmarks/bench_signals_million.py``) it took 46 s
of CPU (86 s in a process's first use, with the compile) with recall@10 0.992 against the exact neighbours
of 2,000 sampled rows; exact neighbours of every row would take about 12 hours (estimated from that sample).
Its first use in every process compiled its graph search with numba, which pynndescent does not cache on
disk: at 100k rows a fresh process's call took 53-61 s against 6 s for the next call in that process.
numba now keeps all but two of those kernels on disk (:func:`cache_pynndescent_kernels`): on 3,000 rows
a fresh process's first call took 18 s against 41-65 s before (paired, a machine at load 5-8; the two
left, ``nn_descent`` and its loop, hold global arrays numba will not cache).
faiss-cpu 1.15's indexes were measured as a replacement (built by one thread, for the same answer every
run; each call in a fresh process, a shared 2-core machine at load 2.5-8) and not adopted. HNSW (M 16,
efConstruction 40, efSearch 32) found recall@10 0.995-0.999 at 100k rows in 13-16 s against
pynndescent's 53-61 s, but at 1M rows like pixel_embeddings' (noisy copies of the digits at 16x16, PCA to
32 dims) only 0.980 with efSearch 64, in 288 s against pynndescent's 0.995 in 106 s. IVF-flat (1,024
lists, 8 probed) found 0.9996-1.0 on those copies but 0.886 on 100k rows of a continuous 10-dimensional
manifold in 32 dims (pynndescent 0.993, HNSW 0.999).
"""
METRICS = ("euclidean", "cosine")
_FINITE_CHUNK = 65_536  # rows checked for a NaN at once (a mask of the whole matrix would double its memory)
_CELLS = 4_194_304  # distances (queries x rows) held at once by the numpy scan: 32 MB of float64
_SKLEARN_WORKING_MB = 32  # where scikit-learn computes distances in blocks of its working memory (1 GB by default)


def _check_k(k: int, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"k must be a positive int, got {k!r}"
        raise InvalidOptionError(msg)
    return min(k, max(0, n - 1))


def _check_rows(rows: np.ndarray, n: int) -> np.ndarray:
    out_of_range = (rows < -n) | (rows >= n)
    if out_of_range.any():
        msg = f"row {int(rows[np.argmax(out_of_range)])} is out of range for {n:,} rows"
        raise RowIndexError(msg)
    return np.asarray(rows % max(n, 1), dtype=np.int64)


def nearest_neighbors(
    vectors: np.ndarray,
    k: int,
    *,
    rows: np.ndarray | list[int] | None = None,
    metric: str = "euclidean",
    backend: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """(distances, positions) of each row's ``k`` nearest other rows, nearest first.

    Parameters
    ----------
    vectors:
        The embedding, rows x dimensions.
    k:
        Neighbours per row (fewer when there are not that many other rows).
    rows:
        The rows to answer for (negative counts from the end); default every row.
    metric:
        ``"euclidean"`` or ``"cosine"`` (1 - the cosine similarity).
    backend:
        ``"sklearn"`` (scikit-learn's NearestNeighbors), ``"numpy"`` (exact, in blocks of rows against
        all rows: O(queries x rows x dimensions) work, bounded memory), ``"pynndescent"``
        (approximate: a nearest-neighbour descent graph, seeded, so the same answer every run) or
        ``"auto"``: when every row is asked, pynndescent above :data:`APPROXIMATE_ROWS` rows and
        scikit-learn below (each when installed), else numpy.

    Returns
    -------
    tuple of numpy.ndarray
        float32 distances and int64 positions, each of shape (queries, k); a row never counts as its
        own neighbour, and equal distances put the lower row first.

    Examples
    --------
    >>> import numpy as np
    >>> distances, positions = nearest_neighbors(np.array([[0.0], [1.0], [5.0]]), 1, backend="numpy")
    >>> positions.ravel().tolist(), distances.ravel().tolist()
    ([1, 0, 1], [1.0, 1.0, 4.0])
    """
    if backend not in BACKENDS:
        msg = f"backend must be one of {BACKENDS}, got {backend!r}"
        raise InvalidOptionError(msg)
    if metric not in METRICS:
        msg = f"metric must be one of {METRICS}, got {metric!r}"
        raise InvalidOptionError(msg)
    data = np.asarray(vectors)
    data = data.astype(np.result_type(data.dtype, np.float32), copy=False)
    n = len(data)
    for start in range(0, n, _FINITE_CHUNK):  # a NaN has no distance: name its row, not a library's refusal
        check_finite(data[start : start + _FINITE_CHUNK], first=start, what="the vectors")
    queries = np.arange(n, dtype=np.int64) if rows is None else _check_rows(np.atleast_1d(np.asarray(rows)), n)
    k = _check_k(k, n)
    if k == 0:
        return np.zeros((len(queries), 0), dtype=np.float32), np.zeros((len(queries), 0), dtype=np.int64)
    every = backend == "auto" and rows is None
    if backend == "pynndescent" or (
        every and n > APPROXIMATE_ROWS and importlib.util.find_spec("pynndescent") is not None
    ):
        return _pynndescent(data, queries, k, metric)
    wants_sklearn = every and importlib.util.find_spec("sklearn") is not None
    if backend == "sklearn" or wants_sklearn:
        return _sklearn(data, queries, k, metric)
    return _blocked(data, queries, k, metric)


def nearest_rows(matrix: np.ndarray, row: int, k: int = 8, *, metric: str = "euclidean") -> np.ndarray:
    """Rows of ``matrix`` nearest to ``row`` (itself left out), closest first: one row of :func:`nearest_neighbors`.

    Examples
    --------
    >>> points = np.array([[0.0, 0.0], [5.0, 5.0], [0.1, 0.0], [1.0, 1.0]])
    >>> nearest_rows(points, 0, k=2).tolist()
    [2, 3]
    """
    _, positions = nearest_neighbors(matrix, k, rows=[row], metric=metric, backend="numpy")
    nearest: np.ndarray = positions[0]
    return nearest


def _sklearn(data: np.ndarray, queries: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    from stable_explore._optional import require

    neighbors = require("sklearn.neighbors", "clean", "nearest neighbours with scikit-learn")
    import sklearn

    model = neighbors.NearestNeighbors(n_neighbors=k + 1, metric=metric).fit(data)
    every = len(queries) == len(data) and bool((queries == np.arange(len(data))).all())
    with sklearn.config_context(working_memory=_SKLEARN_WORKING_MB):
        distances, positions = model.kneighbors(data if every else data[queries])
    return _drop_self(distances, positions, queries, k)


def _pynndescent(data: np.ndarray, queries: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Approximate neighbours of ``queries`` from pynndescent's graph of every row (k + 1: itself is among them)."""
    from stable_explore._optional import require

    pynndescent = require("pynndescent", "clean", "approximate nearest neighbours")
    cache_pynndescent_kernels()
    wanted = min(k + 1, len(data))
    with warnings.catch_warnings():
        # numba says of the two kernels it cannot keep on disk that it compiles them each time, as it always did
        warnings.filterwarnings("ignore", message="Cannot cache compiled function")
        index = pynndescent.NNDescent(
            np.ascontiguousarray(data, dtype=np.float32),
            n_neighbors=min(max(wanted, 15), len(data)),  # a graph of fewer than 15 finds markedly fewer true ones
            metric=metric,
            random_state=0,
            n_jobs=1,  # with a seed, one thread gives the same graph every run
            low_memory=True,
            compressed=True,
        )
    positions, distances = index.neighbor_graph
    positions, distances = positions[queries, :wanted], distances[queries, :wanted]
    order = np.lexsort((positions, distances), axis=1)  # equal distances: the lower row first
    positions = np.take_along_axis(positions, order, axis=1).astype(np.int64)
    distances = np.take_along_axis(distances, order, axis=1)
    distances, positions = _drop_self(distances, positions, queries, k)
    missing = np.flatnonzero((positions < 0).any(axis=1))  # a row the graph left short: answered exactly
    if len(missing):
        distances[missing], positions[missing] = _blocked(data, queries[missing], k, metric)
    return distances, positions


@functools.cache
def cache_pynndescent_kernels() -> int:
    """Have numba keep pynndescent's graph kernels on disk, as its own cached ones are; returns how many it now keeps.

    pynndescent declares most of what builds its graph without ``cache=True``, so every new process (a
    kernel restarted, a worker) compiled them again before its first answer: 31-35 s of CPU on 3,000 rows
    on a calm machine. numba caches them when asked (``Dispatcher.enable_caching``), in
    ``NUMBA_CACHE_DIR`` or beside pynndescent's own files; the next process loads them, and compiles only
    the two numba cannot keep (``nn_descent`` and ``nn_descent_internal``, which hold global arrays):
    14.5 s. Once per process.
    """
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    kept = 0
    for name in ("pynndescent.pynndescent_", "pynndescent.utils", "pynndescent.rp_trees"):
        for dispatcher in vars(importlib.import_module(name)).values():
            if isinstance(dispatcher, CPUDispatcher) and isinstance(getattr(dispatcher, "_cache", None), NullCache):
                dispatcher.enable_caching()
                kept += 1
    return kept


def _drop_self(
    distances: np.ndarray, positions: np.ndarray, queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's neighbours without itself (a row that ties with copies may not come first)."""
    own = positions == queries[:, None]
    own[~own.any(axis=1), -1] = True  # itself not among the k + 1: drop the farthest
    keep = ~own
    shape = (len(positions), k)
    return distances[keep].reshape(shape).astype(np.float32), positions[keep].reshape(shape).astype(np.int64)


def _blocked(data: np.ndarray, queries: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    if metric == "cosine":
        norms = np.linalg.norm(data, axis=1, keepdims=True)
        data = data / np.where(norms == 0, 1, norms)
    squares = np.einsum("ij,ij->i", data, data)
    distances = np.zeros((len(queries), k), dtype=np.float32)
    positions = np.zeros((len(queries), k), dtype=np.int64)
    step = max(1, _CELLS // max(1, len(data)))
    for start in range(0, len(queries), step):
        block_rows = queries[start : start + step]
        products = data[block_rows] @ data.T
        if metric == "cosine":
            block = 1.0 - products
        else:
            block = np.maximum(squares[block_rows, None] + squares[None, :] - 2 * products, 0)
        block[np.arange(len(block_rows)), block_rows] = np.inf
        nearest = np.argpartition(block, k - 1, axis=1)[:, :k]
        near = np.take_along_axis(block, nearest, axis=1)
        order = np.lexsort((nearest, near), axis=1)  # equal distances: the lower row first
        positions[start : start + len(block_rows)] = np.take_along_axis(nearest, order, axis=1)
        near = np.take_along_axis(near, order, axis=1)
        distances[start : start + len(block_rows)] = near if metric == "cosine" else np.sqrt(near)
    return distances, positions


def embedding_outliers(
    ds: CachedDataset,
    embeddings: Embedding | None = None,
    *,
    k: int = 10,
    column: str | None = None,
    num_proc: int | None = None,
    executor: Executor | None = None,
) -> pa.Table:
    """How far each row lies from its ``k`` nearest neighbours in an embedding (high: an outlier).

    Parameters
    ----------
    ds
        The dataset (or a view).
    embeddings
        A column name, an array (one row per row), a function of a batch of rows, or None for the
        offline :func:`~stable_explore.signals.pixel_embeddings` (see :func:`embedding_matrix`).
    k
        Neighbours averaged.
    column
        The image column the fallback reads.
    num_proc, executor
        Workers that decode the images for the fallback (the same result as serially).

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
    vectors = embedding_matrix(ds, embeddings, column=column, num_proc=num_proc, executor=executor)
    distances, _ = nearest_neighbors(vectors, k)
    scores = distances.mean(axis=1) if distances.shape[1] else np.zeros(len(vectors))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[np.lexsort((np.arange(len(scores)), -scores))] = np.arange(1, len(scores) + 1)
    return result_table(ds, np.arange(len(ds)), {"outlier_score": scores.astype(np.float64), "outlier_rank": ranks})
