"""What every signal shares: the rows it speaks of, the image column it reads, and per-image work in batches.

A signal's result is keyed by ``row`` (the position in the dataset it was computed on, what ``ds[row]``,
``ds.drop`` and ``ds.relabel`` take) and ``key`` (the row's stored key, stable across versions).
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future, wait
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
            # our pool: runs of a batch, so this process and the workers end within a batch of each other (smaller
            # runs where they meet measured no better); a given executor (a cluster, each task a round trip): a few
            # runs a worker
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

    With a pool of ours, ``workers`` counts this process (:class:`_SharedRuns`); the pool is kept for the
    next call (:mod:`~stable_explore.catalog.parallel.kept_pool`): a fresh worker's start and first batch
    cost ~50-100 ms, against ~0.2 s of work for 8,000 small JPEGs on two cores. A given ``executor`` (a
    cluster) does all the work, every run submitted at once.
    """
    from stable_explore.catalog.parallel.executor import make_main_spawnable

    make_main_spawnable()  # a process pool starts its workers on first submit, here
    if executor is None:
        from stable_explore.catalog.parallel.kept_pool import kept_pool

        others = max(1, workers - 1)  # this process is the other one
        # never forks the kernel itself (its threads make fork unsafe), and its workers end when this process is killed
        with kept_pool(others) as pool:
            return _SharedRuns(pool, others, ds, column, fn, bounds, on_batch).run()
    futures = [executor.submit(_run_part, ds, column, a, b, fn) for a, b in bounds]
    parts = []
    try:
        for (a, b), future in zip(bounds, futures, strict=True):
            parts.append(future.result())
            on_batch(b - a, 0)
        return parts
    finally:
        for future in futures:
            future.cancel()


class _SharedRuns:
    """Runs of rows shared by this process and ``workers`` workers: the workers from the start, it from the end.

    Each worker is handed one run at a time, the next when its last one is back (a pool queues
    work ahead of its workers, and runs queued there could no longer be taken by this process:
    the two ends then finished up to two runs apart). This process takes runs from the end
    meanwhile, and both stop where they meet, so they end within about a run of each other.
    Waiting for the workers would leave a core idle while they start. With two cores, serial over
    ``num_proc=2`` on 8,000 small JPEGs (``bench_signals.py --only paired``) went from 1.1-1.4x to
    1.3-1.6x when this process took part, and to 1.6-1.96x (medians of three signals, two runs; the
    previous code 1.19-1.27x in the same session) with runs handed out one at a time from a kept
    pool. Progress and errors are reported in this process's thread, in row order; on an error or an
    interrupt, no new run starts and the call returns once the runs under way are done (a batch each).
    """

    def __init__(
        self,
        pool: Executor,
        workers: int,
        ds: CachedDataset,
        column: str,
        fn: ImageBatchFn,
        bounds: list[tuple[int, int]],
        on_batch: Callable[[int, int], None],
    ) -> None:
        self.pool, self.workers, self.ds, self.column, self.fn = pool, workers, ds, column, fn
        self.bounds, self.on_batch = bounds, on_batch
        self.parts: list[dict[str, np.ndarray] | None] = [None] * len(bounds)  # None: not done yet
        self.lock = threading.Lock()
        self.first, self.last = 0, len(bounds)  # the runs nobody has taken yet: first <= i < last
        self.futures: dict[int, Future[dict[str, np.ndarray]]] = {}
        self.returned: queue.SimpleQueue[int] = queue.SimpleQueue()  # runs the workers handed back

    def run(self) -> list[dict[str, np.ndarray]]:
        reported = 0  # the first run not yet reported
        try:
            for _ in range(self.workers):
                self._hand_out()
            while (at := self._take_from_end()) is not None:
                self.parts[at] = _run_part(self.ds, self.column, *self.bounds[at], self.fn)
                reported = self._report_from(reported)
            while reported < len(self.bounds):  # the workers' last runs
                at = self.returned.get()
                self.parts[at] = self.futures[at].result()
                reported = self._report_from(reported)
            return [part for part in self.parts if part is not None]
        finally:
            with self.lock:
                self.last = self.first  # nothing more is handed out or taken
                running = list(self.futures.values())
            wait(running)

    def _report_from(self, reported: int) -> int:
        """Take in what the workers handed back, then report the runs done, in order, from ``reported`` on."""
        while not self.returned.empty():
            at = self.returned.get()
            self.parts[at] = self.futures[at].result()  # a worker's error is raised here, in this thread
        while reported < len(self.bounds) and self.parts[reported] is not None:
            self.on_batch(self.bounds[reported][1] - self.bounds[reported][0], 0)
            reported += 1
        return reported

    def _take_from_end(self) -> int | None:
        with self.lock:
            if self.first >= self.last:
                return None
            self.last -= 1
            return self.last

    def _hand_out(self) -> None:
        """Give a worker the first run nobody has taken (on a run's return, in the pool's thread, too)."""
        with self.lock:
            if self.first >= self.last:
                return
            at = self.first
            try:
                future = self.pool.submit(_run_part, self.ds, self.column, *self.bounds[at], self.fn)
            except (BrokenExecutor, RuntimeError):
                return  # the pool broke or shut down: this process takes the rest (a broken worker's run raises)
            self.first += 1
            self.futures[at] = future
        future.add_done_callback(functools.partial(self._returned, at))

    def _returned(self, at: int, future: Future[dict[str, np.ndarray]]) -> None:
        self.returned.put(at)
        if not future.cancelled() and future.exception() is None:
            self._hand_out()


def result_table(ds: CachedDataset, rows: np.ndarray, columns: dict[str, Any]) -> pa.Table:
    """A signal's result: ``row`` and ``key`` of each of ``rows``, then ``columns``."""
    rows = np.asarray(rows, dtype=np.int64)
    return pa.table({"row": pa.array(rows, type=pa.int64()), "key": keys_of(ds, rows), **columns})
