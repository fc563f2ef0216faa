"""Tasks of a parallel build: the generator's list arguments cut into contiguous parts, and what one task runs.

As in Hugging Face's ``from_generator(gen_kwargs=..., num_proc=...)``, every list-valued argument
of the generator is split (all such lists must have one length), every other argument goes
whole to each task, and task ``i`` gets the ``i``-th contiguous part. :func:`run_task` runs in
a worker: it calls the generator on its part and writes its shards into its own folder of the
build's staging area, reporting rows read and bytes written through a small progress file there.

Examples
--------
>>> def pets(files, size=256):
...     yield from ({"path": f} for f in files)
>>> [task.args for task in split_arguments(pets, (), {"files": ["a", "b", "c"]}, 2)]
[(['a', 'b'], 256), (['c'], 256)]
>>> split_arguments(pets, (), {"files": ["a", "b", "c"]}, 2)[1].inputs
"files=['c']"
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import os
import pickle
import platform
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore._frames import user_frames
from stable_explore._optional import require
from stable_explore.catalog.parallel.owner_watch import watch_owner
from stable_explore.errors import EncodingError, InvalidArgumentTypeError, InvalidOptionError, ParallelBuildError
from stable_explore.storage.backends.fsutil import process_alive
from stable_explore.storage.write.column_batches import is_column_batch
from stable_explore.storage.write.merge import TaskShards
from stable_explore.storage.write.writer import write_shards

if TYPE_CHECKING:
    from stable_explore.schema import Features

__all__ = [
    "CANCEL_FILE",
    "Task",
    "TaskFailure",
    "WriteSpec",
    "job_name",
    "job_state",
    "prepare_worker",
    "read_progress",
    "run_job",
    "run_task",
    "ship",
    "split_arguments",
]

CANCEL_FILE = "CANCEL"
"""Created in the tasks folder when the build stops: every task still running stops at its next row."""
_REPORT_EVERY = 0.2  # seconds between a task's progress writes (and checks for a cancelled build)
# glibc's mallopt parameters (<malloc.h>) and what a pool worker sets them to; see prepare_worker
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_WORKER_TRIM_BYTES = 64 * 2**20
_WORKER_MMAP_BYTES = 32 * 2**20  # glibc's own ceiling for its adaptive threshold on 64-bit systems


@dataclass(frozen=True)
class Task:
    """One part of a parallel build: its place, the arguments its generator call gets, and a short text of them."""

    index: int
    count: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    inputs: str

    def __str__(self) -> str:
        return f"task {self.index} of {self.count} ({self.inputs})"


@dataclass(frozen=True)
class WriteSpec:
    """How every task writes: the features, where (the build's tasks folder), and the writer's settings."""

    features: Features
    tasks_dir: str
    shard_size_bytes: int
    batch_size: int
    compression: str | None


@dataclass
class TaskFailure:
    """What a task returns instead of shards when it failed: the error, where, and the trimmed traceback."""

    index: int
    error: BaseException
    frames: list[tuple[str, int, str, str]]
    """The traceback's frames in the user's code: (file, line number, function, source line or "")."""
    rows: int
    row: int | None = None
    key: Any = None
    last_key: Any = field(default=None)


def split_arguments(
    source: Callable[..., Any], args: tuple[object, ...], kwargs: Mapping[str, object] | None, num_tasks: int
) -> list[Task]:
    """Cut the list arguments of ``source(*args, **kwargs)`` into ``num_tasks`` contiguous parts (fewer if shorter).

    Raises
    ------
    InvalidOptionError
        No argument is a list (there is nothing to split), or the lists differ in length.
    """
    try:
        signature = inspect.signature(source)
        bound = signature.bind(*args, **(kwargs or {}))
    except (TypeError, ValueError) as exc:
        msg = f"{getattr(source, '__name__', source)} cannot take these arguments: {exc}"
        raise InvalidArgumentTypeError(msg) from exc
    bound.apply_defaults()
    lists = {name: value for name, value in bound.arguments.items() if isinstance(value, list)}
    if not lists:
        given = ", ".join(f"{name} ({type(value).__name__})" for name, value in bound.arguments.items()) or "none"
        msg = (
            f"a parallel build splits the generator's list arguments into tasks, but none is a list "
            f"(arguments: {given}); pass the inputs as a list, e.g. kwargs={{'files': sorted(root.glob('*.jpg'))}}"
        )
        raise InvalidOptionError(msg)
    lengths = {name: len(value) for name, value in lists.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {length}" for name, length in lengths.items())
        msg = f"the list arguments split into tasks must have one length, but {described} items"
        raise InvalidOptionError(msg)
    total = next(iter(lengths.values()))
    count = max(1, min(num_tasks, total))  # an empty list still runs the generator once, as a serial build does
    tasks = []
    start = 0
    for index in range(count):
        stop = start + total // count + (1 if index < total % count else 0)
        arguments = dict(bound.arguments)
        for name, value in lists.items():
            arguments[name] = value[start:stop]
        part = inspect.BoundArguments(signature, arguments)  # type: ignore[arg-type,unused-ignore]
        inputs = ", ".join(f"{name}={_short_list(arguments[name])}" for name in lists)
        tasks.append(Task(index, count, tuple(part.args), dict(part.kwargs), inputs))
        start = stop
    return tasks


def _short_list(values: list[object]) -> str:
    """``['a.jpg', 'b.jpg', ..., 'z.jpg'] (26 items)``: enough to recognise a task's inputs."""

    def short(value: object) -> str:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."

    if len(values) <= 3:
        return "[" + ", ".join(short(v) for v in values) + "]"
    return f"[{short(values[0])}, {short(values[1])}, ..., {short(values[-1])}] ({len(values)} items)"


def ship(source: Callable[..., Any]) -> bytes:
    """The generator function as bytes a worker process can load.

    A function importable by name (from a module on the worker's path) is pickled by reference.
    One defined in a notebook, a script's ``__main__`` or another function cannot be found by
    name in a spawned worker, so it is pickled by value with cloudpickle (its code, and the
    globals it reads). Only the generator travels this way; the rows come back as shards.
    """
    module = getattr(source, "__module__", None)
    qualname = getattr(source, "__qualname__", "")
    if module not in (None, "__main__") and "<locals>" not in qualname:
        try:
            return pickle.dumps(source)
        except (pickle.PicklingError, AttributeError, TypeError):
            pass  # not reachable by name after all: by value below
    cloudpickle = require("cloudpickle", "parallel", "a parallel build of a generator defined in a notebook")
    data: bytes = cloudpickle.dumps(source)
    return data


class _Progress:
    """A task's progress file: "rows read, bytes written", rewritten in place every few tenths of a second."""

    def __init__(self, path: Path, cancel: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.cancel = cancel
        self.rows = 0
        self.bytes = 0
        self.next_report = 0.0

    def on_batch(self, rows: int, nbytes: int) -> None:
        self.bytes = max(self.bytes, nbytes)

    def report(self) -> None:
        """Write the counts, and stop the task if the build was cancelled (or its staging folder removed)."""
        self.next_report = time.monotonic() + _REPORT_EVERY
        os.pwrite(self.fd, f"{self.rows} {self.bytes}".ljust(48).encode(), 0)
        if self.cancel.exists() or not self.cancel.parent.is_dir():
            raise KeyboardInterrupt  # the build stopped: nothing this task writes will be used

    def close(self) -> None:
        os.close(self.fd)


def prepare_worker(owner: int | None = None, owner_started: str | None = None) -> bool:
    """Set up a worker process of our own pool (``num_proc=``) before its first task; True if malloc was tuned.

    ``owner`` is the process that runs the build (its start time ``owner_started``): the worker
    ends when that process is gone (:mod:`~stable_explore.catalog.parallel.owner_watch`), so killing a
    kernel mid-build leaves no worker behind.

    A worker lives for one build, so memory it frees need not go back to the system before it
    ends. glibc's malloc gives the top of its heap back whenever more than a threshold (a few
    MB, adapting) is free, and a generator that decodes an image per row frees that much after
    every row: the next row takes the pages back, one page fault per 4 kB. Measured on the
    benchmark's image generator: ~52,000 page faults per worker for 600 rows (0.2-0.4 s of system
    CPU, ~10% of the task) against ~8,000 with the thresholds raised, at the same peak memory.
    A long-running process (a serial build in the kernel, a Dask worker) reached that steady
    state long ago; a fresh worker has not. Elsewhere than glibc nothing is changed.

    Examples
    --------
    The initializer of a pool's workers (here one forked worker, so that the calling process keeps
    its own malloc settings; it tunes nothing on macOS or Windows):

    >>> import multiprocessing
    >>> from concurrent.futures import ProcessPoolExecutor
    >>> fork = multiprocessing.get_context("fork")
    >>> with ProcessPoolExecutor(1, mp_context=fork, initializer=prepare_worker) as pool:
    ...     pool.submit(sum, [1, 2]).result()
    3
    """
    if owner is not None:
        watch_owner(owner, owner_started)
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # Setting the trim threshold turns off glibc's adaptive mmap threshold, so that is set too (to
    # its adaptive ceiling): blocks up to 32 MB come from the heap and are reused, not mapped anew.
    return bool(mallopt(_M_TRIM_THRESHOLD, _WORKER_TRIM_BYTES)) and bool(mallopt(_M_MMAP_THRESHOLD, _WORKER_MMAP_BYTES))


def read_progress(tasks_dir: Path, index: int) -> tuple[int, int]:
    """(rows read, bytes written) that task ``index`` reported last; (0, 0) before it started."""
    try:
        rows, nbytes = (tasks_dir / f"task-{index:05d}.progress").read_text().split()
        return int(rows), int(nbytes)
    except (OSError, ValueError):
        return 0, 0


class _Rows:
    """The generator's items, with a key for every row: a plain dict's key is its index within the task.

    It records the runs of rows that had no key (the driver later shifts those keys by the
    rows of the tasks before), counts the rows and reports progress.
    """

    def __init__(self, items: Iterable[object], progress: _Progress) -> None:
        self.items = items
        self.progress = progress
        self.count = 0
        self.last_key: Any = None
        self.default_keys: list[list[int]] = []

    def __iter__(self) -> Iterator[Any]:
        progress = self.progress
        runs = self.default_keys
        for item in self.items:
            if isinstance(item, tuple):
                if len(item) == 2:
                    self.last_key = item[0]
                yield item
            else:
                if is_column_batch(item, batched=False):
                    msg = (
                        f"row {self.count} of the task is a column batch ({type(item).__name__}): a parallel "
                        "build (num_proc, executor) reads rows; build column batches without num_proc"
                    )
                    raise EncodingError(msg, index=self.count)
                if runs and runs[-1][1] == self.count:
                    runs[-1][1] += 1
                else:
                    runs.append([self.count, self.count + 1])
                self.last_key = None  # the index within the task: not the key the row will have
                yield (self.count, item)
            self.count += 1
            if time.monotonic() >= progress.next_report:
                progress.rows = self.count
                progress.report()


def job_name(role: str, index: int) -> str:
    """The name of a job's marks in the tasks folder (:func:`run_job`): ``task-00003``, ``rekey-00003``."""
    return f"{'task' if role == 'run' else role}-{index:05d}"


def run_job(tasks_dir: str, job: str, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run one job of a parallel build in a worker (a task, a rewrite of its keys), with marks of its start and end.

    The marks are files in the tasks folder, one pair per run (a job an executor retries runs again):
    the start names the worker's host and process, the end is marked whatever happens. A failed build
    waits on them for the jobs it cancelled: an executor whose cancel cannot stop a job (Dask's, Ray's)
    calls it cancelled all the same, and the job would go on writing into the staging folder the build
    is removing. A job that starts once the build has stopped (its cancel file is there) does nothing:
    the build touches that file before it looks at the marks, so a job either is seen and waited for,
    or sees the file. A worker that cannot see the folder marks nothing.
    """
    folder = Path(tasks_dir)
    run = f"{job}.{uuid.uuid4().hex[:8]}"
    _mark(folder / f"{run}.started", f"{socket.gethostname()} {os.getpid()}")
    try:
        if (folder / CANCEL_FILE).exists():
            return None  # the build stopped before this job began, and no longer reads what it returns
        return function(*args, **kwargs)
    finally:
        _mark(folder / f"{run}.ended")


def job_state(tasks_dir: Path, job: str) -> str:
    """``"waiting"`` (no run of it started in a worker that sees ``tasks_dir``), ``"running"`` or ``"ended"``.

    A run whose worker process is gone (a worker of this machine that died) counts as ended.
    """
    runs = [mark for mark in tasks_dir.glob(f"{job}.*.started") if mark.name.count(".") == 2]
    if not runs:
        return "waiting"
    for started in runs:
        if started.with_suffix(".ended").exists():
            continue
        try:
            host, pid = started.read_text().split()
        except (OSError, ValueError):
            return "running"  # being written, or unreadable: assume it runs
        if process_alive(host, int(pid)):
            return "running"
    return "ended"


def _mark(path: Path, text: str = "") -> None:
    with contextlib.suppress(OSError):  # the staging folder is gone (the build stopped), or this worker cannot see it
        path.write_text(text)


def run_task(shipped: bytes, task: Task, spec: WriteSpec) -> TaskShards | TaskFailure:
    """Run one task in a worker: the generator on the task's part, written as shards into a folder of its own.

    Returns what it wrote, or a :class:`TaskFailure` (an error is returned, not raised, so that it
    arrives with the row it names and a traceback trimmed to the user's code, through any executor).
    """
    tasks_dir = Path(spec.tasks_dir)
    rows: _Rows | None = None
    try:
        if not tasks_dir.is_dir():
            msg = (
                f"{task}: the worker cannot see the build's staging folder {tasks_dir}; a parallel build's "
                "workers must share the catalog home's file system"
            )
            raise ParallelBuildError(msg)
        folder = tasks_dir / f"task-{task.index:05d}-{uuid.uuid4().hex[:8]}"  # a retried task writes afresh
        folder.mkdir()
        progress = _Progress(tasks_dir / f"task-{task.index:05d}.progress", tasks_dir / CANCEL_FILE)
        try:
            generator = pickle.loads(shipped)  # noqa: S301 - the driver's own generator, shipped by the driver
            rows = _Rows(generator(*task.args, **task.kwargs), progress)
            fields = write_shards(
                rows,
                spec.features,
                folder,
                shard_size_bytes=spec.shard_size_bytes,
                batch_size=spec.batch_size,
                compression=spec.compression,
                on_batch=progress.on_batch,
            )
            progress.rows = rows.count
            progress.report()
        finally:
            progress.close()
        return TaskShards.of_fields(folder, fields, default_keys=[(a, b) for a, b in rows.default_keys])
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the driver, named
        count = rows.count if rows is not None else 0
        trimmed = _user_traceback(exc)  # before _sendable, which drops the traceback
        return TaskFailure(
            index=task.index,
            error=_sendable(exc),
            frames=trimmed,
            rows=count,
            row=getattr(exc, "index", None) if isinstance(getattr(exc, "index", None), int) else count,
            key=getattr(exc, "key", None),
            last_key=rows.last_key if rows is not None else None,
        )


def _sendable(error: BaseException) -> BaseException:
    """The error itself if it can travel back to the driver; else a stand-in that keeps its type's name and text."""
    try:
        pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes, just made
    except Exception:  # noqa: BLE001 - any failure to pickle means: send the stand-in
        stand_in = ParallelBuildError(f"{type(error).__name__}: {error}")
        stand_in.__notes__ = list(getattr(error, "__notes__", []))  # type: ignore[attr-defined]
        return stand_in
    error.__traceback__ = None
    error.__context__ = None
    return error


def _user_traceback(error: BaseException) -> list[tuple[str, int, str, str]]:
    """The task's traceback without stable-explore's frames (as a serial build's error shows it).

    Plain tuples, so they travel; the driver fills in source lines the worker could not read
    (a notebook cell's code is in the kernel's line cache, not the worker's).
    """
    return [(f.filename, f.lineno or 0, f.name, f.line or "") for f in user_frames(error.__traceback__)]
