"""What every signal shares: the rows it speaks of, the image column it reads, and per-image work in batches.

A signal's result is keyed by ``row`` (the position in the dataset it was computed on, what ``ds[row]``,
``ds.drop`` and ``ds.relabel`` take) and ``key`` (the row's stored key, stable across versions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.schema import ClassLabel, Image
from stable_explore.schema.columns import KEY_COLUMN

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

BATCH_ROWS = 1024  # images decoded per batch: bounded memory, and the unit of work handed to a worker
ImageBatchFn = Callable[[list[bytes | None], int], dict[str, np.ndarray]]


def bytes_per_row(ds: CachedDataset) -> float:
    """The stored bytes of an average row (what :func:`column_values` counts per row read)."""
    return ds.cache_meta.nbytes / max(1, ds.cache_meta.num_rows)


def column_values(ds: CachedDataset, column: str, start: int, stop: int, per_row: float) -> list[Any]:
    """Rows ``start:stop`` of one column as Python values, the shards' mapped pages let go of as reads pass them.

    Signals read every row in order, a batch at a time: counting what they read (``per_row`` bytes a row,
    see :func:`bytes_per_row`), as ``ds.iter`` does, keeps the memory-mapped pages of a whole image
    column from staying resident in the process.
    """
    from stable_explore.storage.read.resident import note_read

    values: list[Any] = ds[start:stop].arrow_column(column).to_pylist()
    note_read((stop - start) * per_row)
    return values


def keys_of(ds: CachedDataset, rows: np.ndarray | None = None) -> pa.Array:
    """The stored key of each row of ``ds`` (or of ``rows`` only), as Arrow."""
    keys = (
        pa.array(ds.base_rows(), type=pa.int64())
        if ds.cache_meta.is_stable_datasets_v1
        else ds.arrow_column(KEY_COLUMN)
    )
    return keys if rows is None else keys.take(pa.array(rows, type=pa.int64()))


def view_hint(ds: CachedDataset, given: int, name: str) -> str:
    """What to say when ``given`` values (one per row) are the whole version's, handed to a view of it."""
    if ds.is_view and given == ds.cache_meta.num_rows != len(ds):
        return (
            f" ({given:,} is the whole version's row count: for this view of {len(ds):,} rows, "
            f"pass {name}[view.base_rows()])"
        )
    return ""


def image_column(ds: CachedDataset, column: str | None) -> str:
    """The image column a per-image signal reads: ``column``, or the dataset's first ``Image`` column."""
    name = column if column is not None else ds.features.first_of(Image)
    if name is None:
        msg = f"no Image column in this dataset (columns: {list(ds.features)}); pass column= naming one"
        raise ColumnNotFoundError(msg)
    if not isinstance(ds.features.get(name), Image):
        msg = f"column {name!r} is not an Image column (it is {ds.features.get(name)!r}); columns: {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    return name


def label_column(ds: CachedDataset, column: str | None) -> tuple[str, ClassLabel]:
    """The ``ClassLabel`` column a label signal reads: ``column``, or the dataset's first one."""
    name = column if column is not None else ds.features.first_of(ClassLabel)
    feature = ds.features.get(name) if name is not None else None
    if name is None or not isinstance(feature, ClassLabel):
        named = f"named {column!r} " if column else ""
        msg = f"no ClassLabel column {named}in this dataset (columns: {list(ds.features)}); pass label= naming one"
        raise ColumnNotFoundError(msg)
    return name, feature


def labels_of(ds: CachedDataset, name: str) -> np.ndarray:
    """The label column as int64 class ids, -1 for a row without a label (a label signal does not judge it)."""
    values = ds.arrow_column(name)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    labels: np.ndarray = values.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return labels


def check_num_proc(num_proc: int | None) -> int:
    """``num_proc`` as a worker count (1: in this process)."""
    if num_proc is None:
        return 1
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        msg = f"num_proc must be a positive int or None, got {num_proc!r}"
        raise InvalidOptionError(msg)
    return num_proc


def _run_part(ds: CachedDataset, column: str, start: int, stop: int, fn: ImageBatchFn) -> dict[str, np.ndarray]:
    """Per-image work on rows ``start:stop`` of ``ds``, batch by batch (runs in a worker too)."""
    parts: list[dict[str, np.ndarray]] = []
    per_row = bytes_per_row(ds)
    for first in range(start, stop, BATCH_ROWS):
        last = min(stop, first + BATCH_ROWS)
        parts.append(fn(column_values(ds, column, first, last, per_row), first))
    if not parts:
        return fn([], start)  # no rows: the empty arrays, with their names and types
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def map_images(ds: CachedDataset, column: str, fn: ImageBatchFn, num_proc: int | None) -> dict[str, np.ndarray]:
    """``fn(encoded images, first row)`` over every row of ``ds`` in batches, joined into one array per name.

    With ``num_proc`` > 1 the rows are cut into runs that worker processes read from the cache themselves
    (a dataset pickles as its location and rows, so no image bytes cross processes); ``fn`` must be a
    module-level function. Results come back in row order either way.
    """
    workers = check_num_proc(num_proc)
    n = len(ds)
    if workers == 1 or n <= BATCH_ROWS:
        return _run_part(ds, column, 0, n, fn)
    step = max(BATCH_ROWS, -(-n // (workers * 4)))
    bounds = [(start, min(n, start + step)) for start in range(0, n, step)]
    # never forks the kernel itself (its threads make fork unsafe), and its workers end when this process is killed
    from stable_explore.catalog.parallel.executor import owned_pool

    with owned_pool(workers) as pool:
        futures = [pool.submit(_run_part, ds, column, a, b, fn) for a, b in bounds]
        parts = [f.result() for f in futures]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def result_table(ds: CachedDataset, rows: np.ndarray, columns: dict[str, Any]) -> pa.Table:
    """A signal's result: ``row`` and ``key`` of each of ``rows``, then ``columns``."""
    rows = np.asarray(rows, dtype=np.int64)
    return pa.table({"row": pa.array(rows, type=pa.int64()), "key": keys_of(ds, rows), **columns})
