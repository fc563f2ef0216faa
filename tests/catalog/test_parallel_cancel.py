"""A failed parallel build stops its jobs, even on an executor whose cancel cannot stop a job (Dask's, Ray's).

Such an executor's future says cancelled whatever the job does: the build goes by the marks each job
leaves in the tasks folder (``run_job``), and a job that starts once the build has stopped does nothing.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, InvalidStateError
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore.catalog.parallel import executor as executor_module
from stable_explore.catalog.parallel.tasks import job_state, run_job

NUM = se.Features(x=se.Value("int64"), s=se.Value("string"))
_settled = contextlib.suppress(InvalidStateError)  # a future the build let go of (cancelled) takes no result


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_jobs_state_comes_from_its_marks_and_a_dead_workers_run_has_ended(tmp_path: Path) -> None:
    assert job_state(tmp_path, "task-00001") == "waiting"
    here = socket.gethostname()
    (tmp_path / "task-00001.aaaa0001.started").write_text(f"{here} {os.getpid()}")
    assert job_state(tmp_path, "task-00001") == "running"
    (tmp_path / "task-00001.aaaa0001.ended").touch()
    assert job_state(tmp_path, "task-00001") == "ended"
    # a retry of the job runs again: its own pair of marks, so the first run's end does not end it
    (tmp_path / "task-00001.bbbb0002.started").write_text(f"{here} {os.getpid()}")
    assert job_state(tmp_path, "task-00001") == "running"
    # a worker process of this machine that died never marks the end: its run has ended all the same
    (tmp_path / "task-00001.bbbb0002.started").write_text(f"{here} {_dead_pid()}")
    assert job_state(tmp_path, "task-00001") == "ended"
    # a worker of another machine may still run: only its end mark says it ended
    (tmp_path / "task-00002.cccc0003.started").write_text(f"elsewhere.example {_dead_pid()}")
    assert job_state(tmp_path, "task-00002") == "running"
    assert job_state(tmp_path, "task-0000") == "waiting", "names are matched whole"


def test_a_job_run_once_its_build_has_stopped_does_nothing_but_mark_it(tmp_path: Path) -> None:
    ran: list[int] = []
    assert run_job(str(tmp_path), "task-00000", ran.append, 1) is None
    (tmp_path / "CANCEL").touch()
    assert run_job(str(tmp_path), "task-00001", ran.append, 2) is None
    assert ran == [1]
    assert job_state(tmp_path, "task-00000") == "ended"
    assert job_state(tmp_path, "task-00001") == "ended"


class _CancelCannotStop(Executor):
    """Like Dask's executor: a job's future never says it runs, so ``cancel()`` succeeds, and the job runs on.

    ``hold(job)`` keeps that job from starting until ``release(job)``.
    """

    def __init__(self) -> None:
        self._held: dict[str, threading.Event] = {}
        self.returned: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []

    def hold(self, job: str) -> None:
        self._held[job] = threading.Event()

    def release(self, job: str) -> None:
        self._held[job].set()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        job = str(args[1])  # run_job(tasks_dir, job, function, ...)
        self.returned[job] = threading.Event()

        def work() -> None:
            if job in self._held:
                self._held[job].wait(30)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the future, as an executor does
                with _settled:
                    future.set_exception(exc)
            else:
                with _settled:
                    future.set_result(result)
            finally:
                self.returned[job].set()

        thread = threading.Thread(target=work, daemon=True)
        self._threads.append(thread)
        thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for thread in self._threads:
            thread.join(30)


def first_fails_others_read(items: list[int], log: str) -> Iterator[dict[str, Any]]:
    """Item 0 fails at once; the other items are rows of 0.3 s, each logged once read."""
    for item in items:
        if item == 0:
            raise ValueError("cannot read item 0")
        time.sleep(0.3)
        with open(log, "a") as out:
            out.write(f"{item}\n")
        yield {"x": item, "s": str(item)}


def test_a_job_that_starts_just_after_the_build_looked_reads_nothing(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The late job is let go as the build finds it not started; it must see that the build stopped."""
    log = tmp_path / "rows.log"
    pool = _CancelCannotStop()
    pool.hold("task-00001")
    real_state = executor_module.job_state

    def looked(tasks_dir: Path, job: str) -> str:
        state = real_state(tasks_dir, job)
        if job == "task-00001" and state == "waiting":
            pool.release(job)  # the worker picks the job up just after the build looked
            # until it has returned (it saw the build stopped) or read a row (it did not): either way, at once
            deadline = time.monotonic() + 10
            while not pool.returned[job].is_set() and not log.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return state

    monkeypatch.setattr(executor_module, "job_state", looked)
    with pytest.raises(ValueError, match="cannot read item 0"):
        se.build(
            first_fails_others_read, NUM, name="late", kwargs={"items": [0, 1, 2, 3], "log": str(log)},
            home=home, progress=False, executor=pool, num_proc=2,
        )  # fmt: skip
    pool.shutdown()
    assert not log.exists(), f"the late job read rows {log.read_text().split()} after its build had stopped"
    versions = home / "late" / "versions"
    assert not versions.exists() or list(versions.iterdir()) == [], "the staging folder is gone"
