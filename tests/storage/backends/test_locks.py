"""Lock files that say who holds them (issue 12 #9): a stopped holder is named, a wait can time out, a dead
holder's lock is taken over. Every holder here is a real second process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog import BuildOptions
from stable_explore.cli import main
from stable_explore.storage.backends import locks
from stable_explore.storage.backends.locks import hold_lock, holder_of, try_remove_lock
from tests.sources import NUM_FEATURES, numbers

ROOT = Path(__file__).resolve().parents[3]

HOLD = """
import os, sys, time
from pathlib import Path
from stable_explore.storage.backends.locks import hold_lock

path, mode = Path(sys.argv[1]), sys.argv[2]
with hold_lock(path):
    if mode == "fork":  # a child inherits the locked descriptor and outlives the holder
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        print("held", flush=True)
        os._exit(0)
    print("held", flush=True)
    time.sleep(60)
"""


def _spawn_holder(path: Path, mode: str = "hold") -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), mode],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the holder and any child it forked (its own session)
    proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def stopped_holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    path = tmp_path / ".build-abc.lock"
    proc = _spawn_holder(path)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield path, proc
    finally:
        _end(proc)


def test_a_stopped_holder_is_named_and_the_wait_times_out(stopped_holder: tuple[Path, subprocess.Popen[str]]) -> None:
    path, proc = stopped_holder
    said: list[str] = []
    started = time.monotonic()
    with (
        pytest.raises(se.LockTimeoutError) as caught,
        hold_lock(path, timeout=1.0, notify=said.append, notice_after=0.2),
    ):
        pass
    waited = time.monotonic() - started
    assert 1.0 <= waited < 5
    assert len(said) == 1
    assert str(path) in said[0]
    assert f"process {proc.pid} on {socket.gethostname()}, since " in said[0]
    error = caught.value
    assert error.path == path
    assert error.waited >= 1.0
    assert f"process {proc.pid}" in error.holder
    assert str(path) in str(error)
    assert f"{error.waited:.1f} s" in str(error)  # the time it waited (1.0 s, or a little more on a loaded machine)
    assert isinstance(error, TimeoutError)
    assert path.exists()  # a held lock is never removed by a waiter
    assert not try_remove_lock(path)


def test_a_killed_holder_is_taken_over_at_once_and_said(tmp_path: Path) -> None:
    path = tmp_path / ".build-abc.lock"
    proc = _spawn_holder(path)
    _end(proc)  # SIGKILL: the kernel lets go of its lock; its record stays in the file
    before = holder_of(path)
    assert before.startswith(f"process {proc.pid} on {socket.gethostname()}, since ")
    said: list[str] = []
    started = time.monotonic()
    with hold_lock(path, timeout=5, notify=said.append):
        assert holder_of(path).startswith(f"process {os.getpid()} on ")
    assert time.monotonic() - started < 1
    assert said == [f"took over the lock {path} from {before}, which is gone (it was killed or crashed)"]
    assert not path.exists()  # let go: removed


def test_a_lock_inherited_by_a_child_of_a_dead_holder_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / ".build-abc.lock"
    proc = _spawn_holder(path, "fork")  # the holder exits; its forked child keeps the lock
    proc.wait(10)
    try:
        said: list[str] = []
        with hold_lock(path, timeout=5, notify=said.append):
            assert holder_of(path).startswith(f"process {os.getpid()} on ")
        assert said
        assert said[0].startswith(f"taking over the lock {path} from process {proc.pid} ")
    finally:
        _end(proc)


def test_the_lock_is_reentrant_in_a_thread_and_excludes_other_threads(tmp_path: Path) -> None:
    import threading

    path = tmp_path / ".refs.lock"
    errors: list[se.LockTimeoutError] = []

    def other_thread() -> None:
        try:
            with hold_lock(path, timeout=0.2):
                pass
        except se.LockTimeoutError as exc:
            errors.append(exc)

    with hold_lock(path):
        with hold_lock(path, timeout=0.01):  # the same thread: re-entered at once
            pass
        assert path.exists()  # the inner block did not let go
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join(10)
    assert len(errors) == 1
    assert f"process {os.getpid()}" in errors[0].holder


# --- builds ----------------------------------------------------------------------------------------

SLOW_BUILD = """
import sys, time
import stable_explore as se
from tests.sources import NUM_FEATURES

def slow():
    yield "a", {"x": 1, "s": "a"}
    print("building", flush=True)
    time.sleep(60)

se.build(slow, NUM_FEATURES, name="t", key="k", home=sys.argv[1], progress=False)
"""


@pytest.fixture
def stopped_builder(home: Path) -> Iterator[subprocess.Popen[str]]:
    """A real build of key 'k' holding its build lock, then SIGSTOPped (as a debugger or ^Z would)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_BUILD, str(home)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "building"
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield proc
    finally:
        _end(proc)


def test_a_build_waiting_for_a_stopped_builder_says_who_and_gives_up(
    home: Path, stopped_builder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locks, "NOTICE_AFTER_SECONDS", 0.3)
    # the wait said as measured: 1.0 s, or more on a loaded machine (a regex for "1.x s" would fail a wait of 2.0 s)
    timed_out = pytest.raises(se.LockTimeoutError, match=r"gave up after waiting \d+\.\d s for the lock .*\.build-")
    with (
        pytest.warns(se.LockWaitWarning, match=f"held by process {stopped_builder.pid} on ") as warned,
        timed_out as caught,
    ):
        se.build(numbers, NUM_FEATURES, name="t", key="k", home=home, progress=False, lock_timeout=1.0)
    assert 1.0 <= caught.value.waited < 5
    assert f"waiting {caught.value.waited:.1f} s" in str(caught.value)
    assert "lock_timeout" in str(warned[0].message)
    assert "since" in str(warned[0].message)
    assert warned[0].filename == __file__  # shown at the user's line, as a notebook shows it
    assert se.gc("t", home=home).swept == []  # the lock is held: gc never sweeps it
    assert list((home / "t").glob(".build-*.lock"))


def test_cli_build_lock_timeout(
    home: Path, stopped_builder: subprocess.Popen[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "gens_lock.py"
    module.write_text(
        "from tests.sources import NUM_FEATURES\n\ndef g():\n    yield 'a', {'x': 1, 's': 'a'}\n", encoding="utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        args = ["--home", str(home), "build", "gens_lock:g", "--features", "gens_lock:NUM_FEATURES", "--name", "t"]
        code = main([*args, "--key", "k", "--lock-timeout", "0.5", "-q"])
    finally:
        sys.path.remove(str(tmp_path))
    err = capsys.readouterr().err
    assert code == 1
    assert "stable-explore build: gave up after waiting" in err
    assert f"held by process {stopped_builder.pid}" in err


def test_lock_timeout_is_checked() -> None:
    with pytest.raises(se.InvalidOptionError, match="lock_timeout must be a number of seconds >= 0"):
        BuildOptions(lock_timeout=-1)
    assert BuildOptions(lock_timeout=2).lock_timeout == 2
