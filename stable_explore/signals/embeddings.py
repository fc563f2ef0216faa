"""Embeddings for the neighbour signals: the user's (a column, or a function of the images) or a pixel fallback.

The fallback, :func:`pixel_embeddings`, needs no model and no download: each image is shrunk to a
small grey square and the pixels are projected on their first principal components (numpy's SVD).
It places look-alike images near each other, which is enough for outliers and neighbour votes on
simple images (digits, icons, scans) and keeps the example notebooks real and offline; for photographs
pass a real model's embeddings instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.schema.image_codec import decode_image_bytes
from stable_explore.signals._rows import BATCH_ROWS, image_column, keys_of

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

    from stable_explore.dataset import CachedDataset

EmbeddingSource = str | np.ndarray | Callable[[list[Any]], Any] | None


def _pixels(ds: CachedDataset, column: str, size: int) -> np.ndarray:
    from PIL import Image as PILImageModule

    out = np.zeros((len(ds), size * size), dtype=np.float32)
    for start in range(0, len(ds), BATCH_ROWS):
        values = ds[start : start + BATCH_ROWS].arrow_column(column).to_pylist()
        for i, data in enumerate(values):
            if data is None:
                continue
            with decode_image_bytes(data) as image:
                image.draft("L", (size * 4, size * 4))
                grey = image.convert("L").resize((size, size), PILImageModule.Resampling.BILINEAR)
                out[start + i] = np.asarray(grey, dtype=np.float32).ravel() / 255
    return out


def pca(data: np.ndarray, dims: int, *, residual: bool = False) -> np.ndarray:
    """``data`` (rows x features) projected on its first ``dims`` principal components (SVD of the centred data).

    ``residual`` adds one more coordinate: how far each row lies off those components (the norm of
    what they leave out), so a row unlike every other (noise, a blank) stays far from the rest
    instead of landing near the centre.
    """
    centred = data - data.mean(axis=0, keepdims=True)
    dims = max(1, min(dims, *centred.shape))
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    projected: np.ndarray = centred @ components[:dims].T
    if residual:
        left = np.linalg.norm(centred - projected @ components[:dims], axis=1)
        projected = np.concatenate([projected, left[:, None]], axis=1)
    return projected


def pixel_embeddings(ds: CachedDataset, *, column: str | None = None, size: int = 16, dims: int = 32) -> np.ndarray:
    """An offline embedding of each image: its ``size`` x ``size`` grey pixels reduced to ``dims`` by PCA.

    One more coordinate holds what the ``dims`` components leave out of each image, so images unlike
    the rest (noise, blanks) stay far from them.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import pixel_embeddings
    >>> rows = [{"image": np.full((8, 8), v, dtype=np.uint8)} for v in (0, 10, 250)]
    >>> ds = se.build(rows, se.Features(image=se.Image()), name="px", home=tempfile.mkdtemp(), progress=False)
    >>> pixel_embeddings(ds, dims=2).shape
    (3, 3)
    """
    return pca(_pixels(ds, image_column(ds, column), size), dims, residual=True).astype(np.float32)


def embeddings_of(ds: CachedDataset, source: EmbeddingSource, *, column: str | None = None) -> np.ndarray:
    """The embedding matrix (rows x dims, float32) ``source`` gives for ``ds``.

    ``source`` is a column name (a fixed-length list or array per row), an array with one row per row
    of ``ds``, a function called with a list of PIL images (a batch) that returns one vector per image,
    or None for :func:`pixel_embeddings`.
    """
    if source is None:
        return pixel_embeddings(ds, column=column)
    if isinstance(source, str):
        if source not in ds.features:
            msg = f"no embedding column {source!r}; columns are {list(ds.features)}"
            raise ColumnNotFoundError(msg)
        return _matrix(ds, ds.arrow_column(source).to_pylist(), f"column {source!r}")
    if callable(source):
        name = image_column(ds, column)
        parts = []
        for start in range(0, len(ds), BATCH_ROWS):
            values = ds[start : start + BATCH_ROWS].arrow_column(name).to_pylist()
            images: list[PILImage] = [decode_image_bytes(v) for v in values]
            parts.append(np.asarray(source(images), dtype=np.float32))
        return _matrix(ds, list(np.concatenate(parts)) if parts else [], "the embedding function's result")
    return _matrix(ds, list(np.asarray(source)), "embeddings=")


def _matrix(ds: CachedDataset, vectors: list[Any], where: str) -> np.ndarray:
    if len(vectors) != len(ds):
        msg = f"{where} gives {len(vectors)} vectors for {len(ds)} rows; one per row is needed"
        raise InvalidOptionError(msg)
    for row, vector in enumerate(vectors):
        if vector is None or not np.all(np.isfinite(np.asarray(vector, dtype=np.float64))):
            key = keys_of(ds)[row].as_py()
            msg = f"{where}: row {row} (key {key!r}) has no finite embedding ({vector!r:.60})"
            raise InvalidOptionError(msg)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except ValueError as exc:
        msg = f"{where}: embeddings must all have the same length ({exc})"
        raise InvalidOptionError(msg) from exc
    if matrix.ndim != 2:
        msg = f"{where}: expected one vector per row (rows x dims), got shape {matrix.shape}"
        raise InvalidOptionError(msg)
    return matrix
