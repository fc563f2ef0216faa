"""Parallel builds: a generator's tasks run on an executor (processes, Dask, Ray), their shards joined in order.

``se.build(gen, F, kwargs={"files": files}, num_proc=8)`` splits the list arguments into
contiguous tasks (:mod:`stable_explore.catalog.parallel.tasks`), runs each on a worker -- a process pool
of ``num_proc`` spawned processes, or any :class:`concurrent.futures.Executor` passed as
``executor=`` (a Dask client's ``get_executor()``, Ray's) -- and each task writes its own shards
into the build's staging folder. Once every task has succeeded, the driver joins the shards in
task order (:mod:`stable_explore.storage.write.merge`) and the build publishes once, as a serial build
does: same rows in the same order, same content digest, same version id.

Progress comes back through the staging folder (each task rewrites a tiny progress file a few
times a second; the driver sums them), so it works with any executor whose workers share the
catalog's file system, which they must anyway to write their shards there.

A failure stops the build: the tasks still queued are cancelled, those running see a cancel
file at their next row and stop, nothing is published and the staging folder is removed.
The error names the task, its inputs and the row.
"""

from __future__ import annotations

import contextlib
import linecache
import multiprocessing
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.catalog.parallel.code_places import CodePlace, code_places, place_of
from stable_explore.catalog.parallel.owner_watch import start_time, watch_owner
from stable_explore.catalog.parallel.tasks import (
    CANCEL_FILE,
    Task,
    TaskFailure,
    WriteSpec,
    job_name,
    job_state,
    prepare_worker,
    read_progress,
    run_job,
    run_task,
    ship,
    split_arguments,
)
from stable_explore.errors import InvalidArgumentTypeError, ParallelBuildError
from stable_explore.storage.write.merge import TaskShards, merge_task_shards, rekey_task_shards

if TYPE_CHECKING:
    from stable_explore.catalog.options import BuildOptions
    from stable_explore.schema import Features
    from stable_explore.storage.write.shards import BatchCallback
    from stable_explore.storage.write.writer import ShardFields

__all__ = ["DEFAULT_EXECUTOR_TASKS", "ParallelBuild", "TaskTraceback", "owned_pool", "process_context"]

DEFAULT_EXECUTOR_TASKS = 32
"""Tasks an ``executor=`` build splits into when ``num_proc`` does not say (fewer if the lists are shorter)."""
_POLL_SECONDS = 0.2
_CANCEL_WAIT_SECONDS = 10.0  # how long a failed build waits for running tasks to notice the cancel file
_MARK_POLL_SECONDS = 0.02  # how often it looks for the end marks of jobs an executor called cancelled
_LOST_WORKER = ("BrokenProcessPool", "KilledWorker", "WorkerCrashedError", "RayActorError")


class TaskTraceback(Exception):
    """The traceback of a task's error in its worker, trimmed to the user's code; the cause of the error raised."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"in the worker:\n{self.text}"


class ParallelBuild:
    """One parallel build: its tasks (split when made, so bad arguments fail before anything runs), and a run."""

    def __init__(
        self,
        source: object,
        features: Features,
        options: BuildOptions,
        *,
        args: tuple[object, ...] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> None:
        if not callable(source):
            msg = (
                "a parallel build (num_proc= or executor=) calls a generator function on each task's part of "
                f"its list arguments; got a {type(source).__name__}, not a function"
            )
            raise InvalidArgumentTypeError(msg)
        self.source: Callable[..., Any] = source
        self.features = features
        self.options = options
        self.tasks: list[Task] = split_arguments(source, args, kwargs, options.num_proc or DEFAULT_EXECUTOR_TASKS)
        self.rows = 0
        """Rows the tasks have read so far (for the note of a failed build)."""
        self._final: dict[int, tuple[int, int]] = {}  # task -> (rows, bytes) once it finished

    def run(self, staging: Path, on_batch: BatchCallback | None = None) -> ShardFields:
        """Run every task, writing into ``staging``; return the joined shards' metadata (nothing published yet)."""
        tasks_dir = staging / "tasks"
        tasks_dir.mkdir()
        spec = WriteSpec(
            self.features,
            str(tasks_dir),
            self.options.shard_size_bytes,
            self.options.batch_size,
            self.options.compression,
        )
        executor, owned = self._executor()
        try:
            outputs = self._run_all(executor, owned, ship(self.source), spec, tasks_dir, on_batch)
        except BaseException:
            if owned:
                _stop_pool(executor)
            raise
        if owned:
            executor.shutdown(wait=True)
        merged = merge_task_shards(
            staging,
            outputs,
            self.features,
            shard_size_bytes=self.options.shard_size_bytes,
            compression=self.options.compression,
        )
        shutil.rmtree(tasks_dir)
        if on_batch is not None:
            on_batch(0, sum(merged["shard_sizes"]))
        return merged

    def _executor(self) -> tuple[Executor, bool]:
        make_main_spawnable()  # a given process pool starts its workers on first submit, after this
        if self.options.executor is not None:
            return self.options.executor, False
        workers = min(self.options.num_proc or 1, len(self.tasks))
        # prepare_worker: a worker lives for one build, so glibc keeps what it frees (far fewer page faults)
        # the workers also watch this process, and end when it is gone (a killed kernel leaves none behind)
        return owned_pool(workers, tune_memory=True), True

    def _run_all(
        self,
        executor: Executor,
        owned: bool,
        shipped: bytes,
        spec: WriteSpec,
        tasks_dir: Path,
        on_batch: BatchCallback | None,
    ) -> list[TaskShards]:
        count = len(self.tasks)
        roles: dict[Future[Any], tuple[str, int]] = {}
        pending: set[Future[Any]] = set()
        try:
            for task in self.tasks:
                job = job_name("run", task.index)
                future = executor.submit(run_job, str(tasks_dir), job, run_task, shipped, task, spec)
                roles[future] = ("run", task.index)
                pending.add(future)
            outputs: list[TaskShards | None] = [None] * count
            placed, offset = 0, 0  # tasks before `placed` have a known offset: their default keys can be rewritten
            while pending:
                done, pending = wait(pending, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: roles[f][1]):
                    role, index = roles[future]
                    output = self._result(future, role, index, tasks_dir)
                    outputs[index] = output
                    if role == "run":
                        self._final[index] = (output.num_rows, sum(output.sizes))
                self._report(tasks_dir, on_batch)
                while placed < count and placed in self._final:
                    finished = outputs[placed]
                    assert finished is not None
                    if offset and finished.default_keys:
                        compression = self.options.compression
                        rekey = executor.submit(
                            run_job, str(tasks_dir), job_name("rekey", placed), rekey_task_shards, finished, offset,
                            compression=compression, stop_file=str(tasks_dir / CANCEL_FILE),
                        )  # fmt: skip
                        roles[rekey] = ("rekey", placed)
                        pending.add(rekey)
                    offset += finished.num_rows
                    placed += 1
        except BaseException:
            self._report(tasks_dir, None)
            _cancel(pending, roles, tasks_dir)
            raise
        return [output for output in outputs if output is not None]

    def _result(self, future: Future[TaskShards | TaskFailure], role: str, index: int, tasks_dir: Path) -> TaskShards:
        task = self.tasks[index]
        try:
            result = future.result()
        except BaseException as exc:
            if isinstance(exc, BrokenExecutor) or type(exc).__name__ in _LOST_WORKER:
                raise self._lost(exc, tasks_dir) from exc
            what = f"rewriting the keys of {task}" if role == "rekey" else f"running {task}"
            _add_note(exc, f"while {what}")
            raise
        if isinstance(result, TaskFailure):
            self._final[index] = (result.rows, read_progress(tasks_dir, index)[1])
            raise self._failed(result)
        if not isinstance(result, TaskShards):
            msg = (
                f"{task} returned {type(result).__name__}, not its shards: is the executor's worker running this build?"
            )
            raise ParallelBuildError(msg)
        return result

    def _failed(self, failure: TaskFailure) -> BaseException:
        """The task's own error, with a note naming the task, its inputs and the row, and its traceback as cause."""
        error = failure.error
        where = f"in {self.tasks[failure.index]}, at row {failure.row} of the task"
        if failure.key is not None:
            where += f" (key {failure.key!r})"
        elif failure.last_key is not None:
            where += f" (the row after key {failure.last_key!r})"
        _add_note(error, where)
        if failure.frames:
            error.__cause__ = TaskTraceback(_format_frames(failure.frames, code_places(self.source)))
        return error

    def _lost(self, error: BaseException, tasks_dir: Path) -> ParallelBuildError:
        """A worker died: name the tasks that were running (started, not finished) and the rows they had read."""
        running = [
            (task, read_progress(tasks_dir, task.index)[0])
            for task in self.tasks
            if task.index not in self._final and (tasks_dir / f"task-{task.index:05d}.progress").exists()
        ]
        if running:
            described = "; ".join(f"{task}, after {rows:,} rows" for task, rows in running)
            which = f"while running {described}"
        else:
            which = "before any task started"
        msg = (
            f"a worker ended abruptly (killed by a signal, out of memory, or os._exit) {which}; "
            f"the other tasks were cancelled ({type(error).__name__}: {error})"
        )
        return ParallelBuildError(msg)

    def _report(self, tasks_dir: Path, on_batch: BatchCallback | None) -> None:
        """Sum the tasks' progress files (and the counts of those that finished) into the one progress bar."""
        rows_total = bytes_total = 0
        for task in self.tasks:
            rows, nbytes = self._final.get(task.index) or read_progress(tasks_dir, task.index)
            rows_total += rows
            bytes_total += nbytes
        grown = rows_total - self.rows
        self.rows = max(self.rows, rows_total)
        if on_batch is not None and (grown > 0 or bytes_total):
            on_batch(max(grown, 0), bytes_total)


def owned_pool(workers: int, *, tune_memory: bool = False) -> ProcessPoolExecutor:
    """A process pool of ours whose workers end when this process is gone (every ``num_proc=`` pool starts here).

    Its workers fork from the fork server (:func:`process_context`), so this process is not their
    parent: killed (a kernel restarted, a SIGKILL, an out-of-memory kill), it could not take them
    along, and they would run their tasks to the end. Each worker watches it instead
    (:mod:`~stable_explore.catalog.parallel.owner_watch`) and exits within a second of its end.
    ``tune_memory`` also keeps freed memory in the worker (see
    :func:`~stable_explore.catalog.parallel.tasks.prepare_worker`), for a worker that lives for one build.

    Examples
    --------
    >>> with owned_pool(1) as pool:
    ...     pool.submit(sum, [1, 2]).result()
    3
    """
    owner = (os.getpid(), start_time(os.getpid()))
    initializer = prepare_worker if tune_memory else watch_owner
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=process_context(), initializer=initializer, initargs=owner
    )


def process_context() -> multiprocessing.context.BaseContext:
    """How a pool of ours starts its workers (see :func:`_process_context`), with ``__main__`` made safe for it."""
    make_main_spawnable()
    return _process_context()


def make_main_spawnable() -> None:
    """Give ``__main__`` the ``__spec__`` that spawn and the fork server read, where it has none.

    An IPython shell started inside a script (or a test) swaps ``__main__`` for a module object
    without ``__spec__``; an interactive ``__main__`` has ``__spec__ = None``, so that is what it gets.
    """
    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        main.__spec__ = None


def _process_context() -> multiprocessing.context.BaseContext:
    """How our pool starts its workers: never by forking the kernel itself, whose threads make fork unsafe.

    Where there is a fork server (Linux, macOS), workers fork from it: a clean process started once per
    session, with stable-explore imported there once, so a pool starts in tens of milliseconds, not the
    seconds each spawned worker takes to import it (measured on a busy 2-core machine: 2-3 s for two
    spawned workers; a tiny num_proc=2 build takes ~2 s the first time, when the server starts, and
    0.2 s after). Elsewhere: spawn.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    global _preloaded
    if not _preloaded:  # once: the server starts with the first pool, and reads the list then
        # What a task's first rows import: without pandas (pyarrow imports it on first use) and
        # cloudpickle here, every new worker spent ~1 s importing them; the per-image signals' decoders
        # (~50 ms of CPU in each worker of every num_proc= pool) too, and the dataset a signal's or a
        # map's task unpickles with the readers it opens (31 modules, ~50 ms of CPU in each worker,
        # since stable_explore.dataset names its members lazily). A missing one is skipped.
        preload = [
            "stable_explore.catalog.parallel.tasks",
            "pandas",
            "cloudpickle",
            "stable_explore.dataset.cached_dataset",
        ]
        signals = ["stable_explore.signals.images", "stable_explore.signals._jpeg", "PIL.Image", "simplejpeg"]
        context.set_forkserver_preload([*preload, *signals])
        _preloaded = True
    return context


_preloaded = False


def _format_frames(frames: list[tuple[str, int, str, str]], places: list[CodePlace]) -> str:
    """A worker's frames as a traceback, with source lines from this process where the worker had none.

    A frame whose file the worker only knew by a placeholder (code shipped by value) is given the file
    of the driver's code object with its name and line, when exactly one fits.
    """
    shown = []
    for name, line, function, text in frames:
        file = name if linecache.getline(name, line) else (place_of(places, function, line) or name)
        shown.append((file, line, function, text or linecache.getline(file, line).strip()))
    summary = traceback.StackSummary.from_list(shown)
    return "".join(["Traceback (most recent call last):\n", *summary.format()]).rstrip("\n")


def _cancel(pending: set[Future[Any]], roles: Mapping[Future[Any], tuple[str, int]], tasks_dir: Path) -> None:
    """Stop a failed build's jobs: cancel the queued, tell the running to stop, and wait a little for them.

    A job's future may say cancelled while the job runs on (a Dask or Ray executor's cancel cannot stop
    it): those are waited for by the marks they leave, so that none writes into the staging folder as
    it is removed, nor goes on reading the user's data after the build has returned.
    """
    with contextlib.suppress(OSError):
        (tasks_dir / CANCEL_FILE).touch()
    for future in pending:
        future.cancel()
    deadline = time.monotonic() + _CANCEL_WAIT_SECONDS
    running = [future for future in pending if not future.done()]
    if running:
        wait(running, timeout=_CANCEL_WAIT_SECONDS)
    unsure = [job_name(*roles[future]) for future in pending if future.cancelled()]
    while unsure and time.monotonic() < deadline:
        unsure = [job for job in unsure if job_state(tasks_dir, job) == "running"]
        if unsure:
            time.sleep(_MARK_POLL_SECONDS)


def _stop_pool(pool: Executor) -> None:
    """Shut down our own process pool after a failure, ending workers still stuck in a generator."""
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    # Before 3.14 a pool has no public way to end its workers; a task stuck inside a row would
    # otherwise keep its process (and the kernel's resources) until the row ends.
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            if process.is_alive():
                process.terminate()


def _add_note(error: BaseException, note: str) -> None:
    add = getattr(error, "add_note", None)  # Python 3.11+
    if add is not None and note not in (getattr(error, "__notes__", None) or []):
        add(note)
