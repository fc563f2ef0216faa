"""One embedding matrix (rows x dimensions, float) from what a user passes: a column, an array or a function.

A column may be a ``Sequence`` of numbers (fixed or variable length, every row the same length), an
``Array3D`` (flattened) or a single number column. A function is called on batches of rows (a dict of
column -> list, in the dataset's format) and returns one vector per row of the batch.
"""

from __future__ import annotations

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

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["Embedding", "embedding_matrix"]

Embedding = str | np.ndarray | Callable[[dict[str, list[Any]]], Any]
"""A column name, an array of shape (rows, dimensions), or a function of a batch of rows."""


def _from_list_column(values: pa.Array, name: str) -> np.ndarray:
    if pa.types.is_fixed_size_list(values.type):
        width = values.type.list_size
    else:
        lengths = np.asarray(values.value_lengths().fill_null(-1).to_numpy(zero_copy_only=False))
        if len(lengths) and (lengths != lengths[0]).any():
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            msg = (
                f"column {name!r}: row {row} has {lengths[row]} values where row 0 has {lengths[0]}; "
                "an embedding needs the same number of values in every row"
            )
            raise EncodingError(msg)
        width = int(lengths[0]) if len(lengths) else 0
    if values.null_count:
        row = int(np.flatnonzero(np.asarray(values.is_null().to_numpy(zero_copy_only=False)))[0])
        msg = f"column {name!r}: row {row} has no embedding (null); fill it before projecting"
        raise EncodingError(msg)
    flat = values.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float64).reshape(len(values), width)


def _from_column(dataset: CachedDataset, name: str) -> np.ndarray:
    if name not in dataset.features:
        msg = f"no column {name!r} to take an embedding from; columns are {list(dataset.features)}"
        raise ColumnNotFoundError(msg)
    feature = dataset.features[name]
    values = dataset.arrow_column(name)
    if isinstance(feature, Array3D):
        return np.stack([np.asarray(feature.decode_value(v), dtype=np.float64).ravel() for v in values.to_pylist()])
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type) or pa.types.is_fixed_size_list(values.type):
        return _from_list_column(values, name)
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return np.asarray(values.fill_null(np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)[:, None]
    msg = f"column {name!r} holds {values.type}, not numbers or lists of numbers; it cannot be an embedding"
    raise InvalidOptionError(msg)


def _from_function(dataset: CachedDataset, function: Callable[..., Any], batch_size: int) -> np.ndarray:
    parts = []
    start = 0
    for batch in dataset.iter(batch_size=batch_size):
        rows = len(next(iter(batch.values()))) if batch else 0
        part = np.asarray(function(batch), dtype=np.float64)
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


def embedding_matrix(dataset: CachedDataset, embedding: Embedding, *, batch_size: int = 1000) -> np.ndarray:
    """The embedding of every row of ``dataset`` as a float64 matrix (rows x dimensions).

    Parameters
    ----------
    dataset:
        The rows (a version or a view).
    embedding:
        A column name (a ``Sequence`` of numbers, an ``Array3D`` or a number column), an array of shape
        (rows, dimensions), or a function called on batches of rows (a dict of column -> list) that
        returns an array of shape (batch rows, dimensions).
    batch_size:
        Rows per call of a function.

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
    if isinstance(embedding, str):
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
        raise InvalidOptionError(msg)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        msg = f"{where}: row {row} has a NaN or infinite value; an embedding must be finite in every row"
        raise EncodingError(msg)
    return matrix
