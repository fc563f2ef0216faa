"""Embeddings: one matrix (rows x dimensions) from what a user passes, or an offline fallback from the pixels.

An embedding is a column (a ``Sequence`` of numbers, fixed or variable length with every row the same
length; an ``Array3D``, flattened; or a single number column), an array with one row per row, or a
function called on batches of rows (a dict of column -> list in the dataset's format: images as PIL
images by default) that returns one vector per row of the batch.

The fallback, :func:`pixel_embeddings`, needs no model and no download: each image is shrunk to a
small grey square and the pixels are projected on their first principal components.
It places look-alike images near each other, which is enough for outliers and neighbour votes on
simple images (digits, icons, scans) and keeps the example notebooks real and offline; for photographs
pass a real model's embeddings instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import (
    ColumnNotFoundError,
    EncodingError,
    InvalidArgumentTypeError,
    InvalidOptionError,
)
from stable_explore.schema import Array3D
from stable_explore.schema.image_codec import decode_image_bytes
from stable_explore.signals._rows import image_column, keys_of, view_hint
from stable_explore.signals.projection import pca

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from stable_explore.dataset import CachedDataset

__all__ = ["Embedding", "embedding_matrix", "pixel_embeddings"]

Embedding = str | np.ndarray | Callable[[dict[str, list[Any]]], Any]
"""A column name, an array of shape (rows, dimensions), or a function of a batch of rows."""


def _row_named(dataset: CachedDataset, row: int) -> str:
    return f"row {row} (key {keys_of(dataset)[row].as_py()!r})"


def _from_list_column(dataset: CachedDataset, values: pa.Array, name: str) -> np.ndarray:
    if pa.types.is_fixed_size_list(values.type):
        width = values.type.list_size
    else:
        lengths = np.asarray(values.value_lengths().fill_null(-1).to_numpy(zero_copy_only=False))
        if len(lengths) and (lengths != lengths[0]).any():
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            msg = (
                f"column {name!r}: {_row_named(dataset, row)} has {lengths[row]} values where row 0 has "
                f"{lengths[0]}; an embedding needs the same number of values in every row"
            )
            raise EncodingError(msg)
        width = int(lengths[0]) if len(lengths) else 0
    if values.null_count:
        row = int(np.flatnonzero(np.asarray(values.is_null().to_numpy(zero_copy_only=False)))[0])
        msg = f"column {name!r}: {_row_named(dataset, row)} has no embedding (null); fill it before using it"
        raise EncodingError(msg)
    flat = values.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float64).reshape(len(values), width)


def _from_column(dataset: CachedDataset, name: str) -> np.ndarray:
    if name not in dataset.features:
        msg = f"no embedding column {name!r}; columns are {list(dataset.features)}"
        raise ColumnNotFoundError(msg)
    feature = dataset.features[name]
    values = dataset.arrow_column(name)
    if isinstance(feature, Array3D):
        return np.stack([np.asarray(feature.decode_value(v), dtype=np.float64).ravel() for v in values.to_pylist()])
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type) or pa.types.is_fixed_size_list(values.type):
        return _from_list_column(dataset, values, name)
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return np.asarray(values.fill_null(np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)[:, None]
    msg = f"column {name!r} holds {values.type}, not numbers or lists of numbers; it cannot be an embedding"
    raise InvalidOptionError(msg)


def _from_function(dataset: CachedDataset, function: Callable[..., Any], batch_size: int) -> np.ndarray:
    parts = []
    start = 0
    for batch in dataset.iter(batch_size=batch_size):
        rows = len(batch) if isinstance(batch, pa.Table) else len(next(iter(batch.values()))) if batch else 0
        try:
            part = np.asarray(function(batch), dtype=np.float64)
        except ValueError as exc:
            msg = f"the embedding function's vectors for rows {start}..{start + rows - 1} differ in length ({exc})"
            raise InvalidOptionError(msg) from exc
        if part.ndim == 1:
            part = part[:, None]
        if part.ndim != 2 or len(part) != rows:
            msg = (
                f"the embedding function returned shape {part.shape} for rows {start}..{start + rows - 1}; "
                f"it must return one vector per row: shape ({rows}, dimensions)"
            )
            raise InvalidOptionError(msg)
        parts.append(part)
        start += rows
    return np.concatenate(parts) if parts else np.zeros((0, 1))


def embedding_matrix(
    dataset: CachedDataset,
    embedding: Embedding | None,
    *,
    column: str | None = None,
    batch_size: int = 1000,
    num_proc: int | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """The embedding of every row of ``dataset`` as a float64 matrix (rows x dimensions).

    Parameters
    ----------
    dataset:
        The rows (a version or a view).
    embedding:
        A column name (a ``Sequence`` of numbers, an ``Array3D`` or a number column), an array of shape
        (rows, dimensions), a function called on batches of rows (a dict of column -> list, images as
        PIL images) that returns an array of shape (batch rows, dimensions), or None for the offline
        :func:`pixel_embeddings` of the image column.
    column:
        With ``embedding=None``: the image column (default: the first ``Image`` column).
    batch_size:
        Rows per call of a function.
    num_proc, executor:
        With ``embedding=None``: workers that decode the images (see :func:`pixel_embeddings`).

    Returns
    -------
    numpy.ndarray
        Shape (len(dataset), dimensions), every value finite.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> features = se.Features(vec=se.Sequence(se.Value("float32"), length=2))
    >>> ds = se.build([{"vec": [i, 2 * i]} for i in range(3)], features, name="vec", home=tempfile.mkdtemp(),
    ...               progress=False)
    >>> embedding_matrix(ds, "vec").tolist()
    [[0.0, 0.0], [1.0, 2.0], [2.0, 4.0]]
    >>> embedding_matrix(ds, lambda batch: [[len(v)] for v in batch["vec"]]).shape
    (3, 1)
    """
    if embedding is None:
        matrix = pixel_embeddings(dataset, column=column, num_proc=num_proc, executor=executor).astype(np.float64)
        where = "the pixel embedding"
    elif isinstance(embedding, str):
        matrix = _from_column(dataset, embedding)
        where = f"column {embedding!r}"
    elif callable(embedding):
        matrix = _from_function(dataset, embedding, batch_size)
        where = "the embedding function's output"
    elif isinstance(embedding, (np.ndarray, list, tuple)):
        matrix = np.asarray(embedding, dtype=np.float64)
        if matrix.ndim == 1:
            matrix = matrix[:, None]
        where = "the embedding array"
    else:
        msg = f"embedding must be a column name, an array or a function of a batch, got {type(embedding).__name__}"
        raise InvalidArgumentTypeError(msg)
    if matrix.ndim != 2 or len(matrix) != len(dataset):
        msg = f"{where} has shape {matrix.shape}; the dataset has {len(dataset):,} rows: expected ({len(dataset)}, d)"
        if matrix.ndim == 2 and not isinstance(embedding, str):
            msg += view_hint(dataset, len(matrix), "embedding")
        raise InvalidOptionError(msg)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        named = ", ".join(_row_named(dataset, int(row)) for row in bad[:5])
        more = f", and {len(bad) - 5:,} more" if len(bad) > 5 else ""
        verb = "has" if len(bad) == 1 else f"({len(bad):,} rows) have"
        msg = (
            f"{where}: {named}{more} {verb} a NaN or infinite value; an embedding must be finite: "
            f"recompute those rows, or leave them out (ds.drop(rows))"
        )
        raise InvalidOptionError(msg)
    return matrix


def pixels_batch(values: list[Any], first: int, size: int) -> dict[str, np.ndarray]:
    """Each encoded image as ``size`` x ``size`` grey pixels in 0..1, one flat row per image (zeros for None)."""
    from PIL import Image as PILImageModule

    out = np.zeros((len(values), size * size), dtype=np.float32)
    for i, data in enumerate(values):
        if data is None:
            continue
        with decode_image_bytes(data) as image:
            image.draft("L", (size * 4, size * 4))
            grey = image.convert("L").resize((size, size), PILImageModule.Resampling.BILINEAR)
            out[i] = np.asarray(grey, dtype=np.float32).ravel() / 255
    return {"pixels": out}


def pixel_embeddings(
    ds: CachedDataset,
    *,
    column: str | None = None,
    size: int = 16,
    dims: int = 32,
    num_proc: int | None = None,
    executor: Executor | None = None,
    cache: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """An offline embedding of each image: its ``size`` x ``size`` grey pixels reduced to ``dims`` by PCA.

    One more coordinate holds what the ``dims`` components leave out of each image, so images unlike
    the rest (noise, blanks) stay far from them. ``num_proc`` / ``executor`` decode in workers (the
    same result as serially), ``cache`` keeps the result in the home for the next call (see
    :mod:`stable_explore.signals.cache`), ``progress`` shows a bar of rows decoded.

    Examples
    --------
    >>> import stable_explore as se, tempfile, numpy as np
    >>> from stable_explore.signals import pixel_embeddings
    >>> rows = [{"image": np.full((8, 8), v, dtype=np.uint8)} for v in (0, 10, 250)]
    >>> ds = se.build(rows, se.Features(image=se.Image()), name="px", home=tempfile.mkdtemp(), progress=False)
    >>> pixel_embeddings(ds, dims=2).shape
    (3, 3)
    """
    import pyarrow as pa

    from stable_explore.signals._rows import check_executor, map_images
    from stable_explore.signals.cache import cached_signal

    name = image_column(ds, column)
    check_executor(executor)

    def compute() -> pa.Table:
        fn = functools.partial(pixels_batch, size=size)
        pixels = map_images(ds, name, fn, num_proc, executor=executor, progress=progress, verb="pixels of")["pixels"]
        matrix = pca(pixels, dims, residual=True).astype(np.float32)
        flat = pa.array(matrix.ravel(), type=pa.float32())
        return pa.table({"embedding": pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])})

    params = {"column": name, "size": size, "dims": dims, "revision": 1}
    table = cached_signal(ds, "pixel_embeddings", params, compute, cache=cache)
    values = table.column("embedding").combine_chunks()
    width = values.type.list_size
    embedded: np.ndarray = np.array(values.flatten().to_numpy(), dtype=np.float32).reshape(len(values), width)
    return embedded
