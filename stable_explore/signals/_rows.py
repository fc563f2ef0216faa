"""What every signal shares: the rows it speaks of, the image column it reads, and per-image work in batches.

A signal's result is keyed by ``row`` (the position in the dataset it was computed on, what ``ds[row]``,
``ds.drop`` and ``ds.relabel`` take) and ``key`` (the row's stored key, stable across versions).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
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


def check_executor(executor: Executor | None) -> Executor | None:
    """``executor`` if it is a :class:`concurrent.futures.Executor` (or None)."""
    if executor is not None and not isinstance(executor, Executor):
        msg = (
            f"executor must be a concurrent.futures.Executor (a ProcessPoolExecutor, a Dask client's "
            f"get_executor(), Ray's), got {type(executor).__name__}"
        )
        raise InvalidOptionError(msg)
    return executor


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


def map_images(
    ds: CachedDataset,
    column: str,
    fn: ImageBatchFn,
    num_proc: int | None,
    *,
    executor: Executor | None = None,
    progress: bool = False,
    verb: str = "measuring",
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, np.ndarray]:
    """``fn(encoded images, first row)`` over every row of ``ds`` in batches, joined into one array per name.

    With ``num_proc`` > 1, or an ``executor`` (any :class:`concurrent.futures.Executor`: a Dask
    client's, Ray's), the rows are cut into runs that workers read from the cache themselves (a
    dataset pickles as its location and rows, so no image bytes cross processes); ``fn`` must then
    pickle (a module-level function, or a ``functools.partial`` of one). Results come back in row
    order either way, equal to the serial ones. ``progress`` shows a bar of rows done; an interrupt
    (Ctrl-C, a notebook's stop button) ends the work with the bar saying how far it got.
    ``on_progress(rows done, rows in all)`` is called after each batch (a widget's progress line); an
    exception it raises stops the work there.
    """
    workers = check_num_proc(num_proc)
    check_executor(executor)
    n = len(ds)
    from stable_explore.display.progress import progress_bar

    label = ds.name or str(ds.cache_dir)
    disable = not progress or n <= BATCH_ROWS
    with progress_bar(label, n, verb=verb, disable=disable, count_bytes=False) as bar:
        done = 0

        def on_batch(rows: int, nbytes: int) -> None:
            nonlocal done
            bar(rows, nbytes)
            done += rows
            if on_progress is not None:
                on_progress(done, n)

        if executor is None and (workers == 1 or n <= BATCH_ROWS):
            parts: list[dict[str, np.ndarray]] = []
            for first in range(0, n, BATCH_ROWS):
                last = min(n, first + BATCH_ROWS)
                parts.append(_run_part(ds, column, first, last, fn))
                on_batch(last - first, 0)
            if not parts:
                return _run_part(ds, column, 0, 0, fn)
        else:
            # our pool: runs of one batch, so the caller and the workers end within a batch of each other; a given
            # executor (a cluster, each task a round trip): a few runs a worker
            step = BATCH_ROWS if executor is None else max(BATCH_ROWS, -(-n // (max(workers, 4) * 4)))
            bounds = [(start, min(n, start + step)) for start in range(0, n, step)]
            parts = _in_workers(ds, column, fn, bounds, workers, executor, on_batch)
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _in_workers(
    ds: CachedDataset,
    column: str,
    fn: ImageBatchFn,
    bounds: list[tuple[int, int]],
    workers: int,
    executor: Executor | None,
    on_batch: Callable[[int, int], None],
) -> list[dict[str, np.ndarray]]:
    """Each run of rows on a worker (``executor``'s, or a pool of ours), its result in order; cancelled on an error.

    With a pool of ours, ``workers`` counts this process: it starts ``workers - 1`` worker processes and
    takes runs from the end of the list itself while they take them from the start, each run done once
    (a run a worker has not started is cancelled before this process takes it). Waiting for them would
    leave a core idle while they start: with two cores, serial over ``num_proc=2`` went from 1.1-1.4x to
    1.3-1.6x on 8,000 small JPEGs, and from 1.4-1.6x to 1.5-1.8x on 40,000 (a worker's start and first
    batch cost ~50-100 ms). A given ``executor`` (a cluster) does all the work.
    """
    from stable_explore.catalog.parallel.executor import make_main_spawnable, owned_pool

    own = executor is None
    make_main_spawnable()  # a given process pool starts its workers on first submit, here
    if executor is None:
        # never forks the kernel itself (its threads make fork unsafe), and its workers end when this process is killed
        executor = owned_pool(max(1, workers - 1))
    futures = [executor.submit(_run_part, ds, column, a, b, fn) for a, b in bounds]
    parts: list[dict[str, np.ndarray] | None] = [None] * len(bounds)  # None: not done yet

    def done(at: int, part: dict[str, np.ndarray]) -> None:
        parts[at] = part
        on_batch(bounds[at][1] - bounds[at][0], 0)

    reported = 0  # the first of the workers' runs not yet taken in
    try:
        if own:
            # runs from the end, while the workers have not started them (the pool hands runs out in order)
            for at in range(len(bounds) - 1, 0, -1):
                if not futures[at].cancel():
                    break
                done(at, _run_part(ds, column, *bounds[at], fn))
                while reported < at and futures[reported].done():  # the runs the workers finished meanwhile
                    done(reported, futures[reported].result())
                    reported += 1
        for at, future in enumerate(futures):
            if parts[at] is None:
                done(at, future.result())
        return [part for part in parts if part is not None]
    finally:
        for future in futures:
            future.cancel()
        if own:
            executor.shutdown(wait=True, cancel_futures=True)


def result_table(ds: CachedDataset, rows: np.ndarray, columns: dict[str, Any]) -> pa.Table:
    """A signal's result: ``row`` and ``key`` of each of ``rows``, then ``columns``."""
    rows = np.asarray(rows, dtype=np.int64)
    return pa.table({"row": pa.array(rows, type=pa.int64()), "key": keys_of(ds, rows), **columns})
