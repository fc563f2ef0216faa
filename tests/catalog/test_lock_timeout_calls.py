"""``lock_timeout=`` bounds every lock a call takes, the dataset's refs lock included.

Before, only a build's own lock honoured it: a build, save, tag, gc, push or pull whose dataset's
refs lock another process held waited ``$STABLE_EXPLORE_LOCK_TIMEOUT`` seconds (default 300; 306.9 s
measured) whatever the call said. Here another process holds the refs lock for real (a ``flock`` on
the lock file, with its holder record), and each call gives up within a few seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore.catalog import StoreCatalog
from stable_explore.catalog.names import open_store
from stable_explore.errors import GcProblemWarning, InvalidOptionError, LockTimeoutError
from stable_explore.storage.backends.locks import LOCK_TIMEOUT_ENV

FEATURES = se.Features(x=se.Value("int64"))

HOLDER = """
import sys, time
from pathlib import Path
from stable_explore.storage.backends.locks import hold_lock
with hold_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def refs_held_by_another_process(home: Path) -> Iterator[tuple[Path, int]]:
    """Dataset ``d`` (two versions) whose refs lock a child process holds: (the lock file, the child's pid)."""
    se.build([{"x": 1}], FEATURES, name="d", home=home, progress=False)
    se.build([{"x": 2}], FEATURES, name="d", home=home, progress=False)
    lock = home / "d" / ".refs.lock"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop(LOCK_TIMEOUT_ENV, None)
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        yield lock, child.pid
    finally:
        child.kill()
        child.wait()


CALLS: dict[str, Callable[[Path, Path], Any]] = {
    "build": lambda home, _: se.build([{"x": 3}], FEATURES, name="d", home=home, progress=False, lock_timeout=1),
    "save": lambda home, _: se.load("d", home=home).drop([0]).save(progress=False, lock_timeout=1),
    "tag": lambda home, _: se.tag("d", "reviewed", home=home, lock_timeout=1),
    "pull": lambda home, tmp: se.pull(f"file://{tmp / 'team'}/d", home=home, progress=False, lock_timeout=1),
    "push": lambda home, tmp: se.push(
        se.build([{"x": 3}], FEATURES, name="d", home=tmp / "mine", progress=False),
        home,
        progress=False,
        lock_timeout=1,
    ),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_lock_timeout_bounds_the_refs_lock_of_every_call(
    call: str,
    home: Path,
    tmp_path: Path,
    refs_held_by_another_process: tuple[Path, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    lock, holder = refs_held_by_another_process
    if call == "pull":
        se.build([{"x": 9}], FEATURES, name="d", home=tmp_path / "team", progress=False)
    started = time.monotonic()
    with pytest.raises(LockTimeoutError) as raised:
        CALLS[call](home, tmp_path)
    waited = time.monotonic() - started
    assert waited < 8, f"{call} waited {waited:.1f} s with lock_timeout=1"
    assert raised.value.path == lock
    assert f"process {holder} on " in str(raised.value), "the error names the holder"
    assert str(lock) in str(raised.value)


def test_gc_gives_up_on_a_held_dataset_within_lock_timeout_and_says_so(
    home: Path, refs_held_by_another_process: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    lock, holder = refs_held_by_another_process
    started = time.monotonic()
    # the wait said as measured: 1.0 s, or more on a loaded machine (a regex for "1.x s" would fail a wait of 2.0 s)
    with pytest.warns(
        GcProblemWarning, match=rf"gave up after waiting \d+\.\d s for the lock .*held by process {holder}"
    ) as warned:
        report = se.gc("d", keep=0, home=home, lock_timeout=1)
    assert time.monotonic() - started < 8
    gave_up = next(str(w.message) for w in warned if issubclass(w.category, GcProblemWarning))
    said = re.search(r"gave up after waiting (\d+\.\d) s", gave_up)
    assert said is not None
    assert float(said[1]) >= 1.0
    assert report.removed == []
    assert any(str(lock) in problem for problem in report.problems)
    assert len(se.versions("d", home=home)) == 2, "the dataset was skipped, whole"


def test_the_call_comes_before_the_environment(
    home: Path, refs_held_by_another_process: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "600")
    started = time.monotonic()
    with pytest.raises(LockTimeoutError):
        se.tag("d", "reviewed", home=home, lock_timeout=0.5)
    assert time.monotonic() - started < 5


def test_without_lock_timeout_the_environment_still_bounds_the_wait(
    home: Path, refs_held_by_another_process: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "0.5")
    with pytest.raises(LockTimeoutError):
        se.tag("d", "reviewed", home=home)


def test_a_bad_lock_timeout_is_refused_before_any_work(home: Path) -> None:
    ds = se.build([{"x": 1}, {"x": 2}], FEATURES, name="d", home=home, progress=False)
    for call in (
        lambda: ds.drop([0]).save(progress=False, lock_timeout=-1),
        lambda: se.tag(ds, "t", lock_timeout="5"),  # type: ignore[arg-type]
        lambda: se.gc("d", home=home, lock_timeout=True),
    ):
        with pytest.raises(InvalidOptionError, match="lock_timeout must be a number of seconds"):
            call()
    assert [row["version"] for row in se.versions("d", home=home)] == [ds.version]
    assert "t" not in se.load("d", home=home).metadata.get("tags", ())


def test_lock_timeout_is_this_calls_only(home: Path, refs_held_by_another_process: tuple[Path, int]) -> None:
    with pytest.raises(LockTimeoutError):
        se.tag("d", "reviewed", home=home, lock_timeout=0.2)
    from stable_explore.storage.backends.locks import lock_timeout

    assert lock_timeout(300.0) == (float(os.environ[LOCK_TIMEOUT_ENV]) if os.environ.get(LOCK_TIMEOUT_ENV) else 300.0)


def test_lock_timeout_bounds_a_buckets_refs_lease(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    ds = se.build([{"x": 1}], FEATURES, name="d", home=bucket, progress=False)
    other = StoreCatalog(open_store(bucket))  # another store object: its lease is another holder's
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with other.refs_lock("d"):
            held.set()
            done.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(30)
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match=r"d/\.refs\.lock.*held by"):
            se.tag(ds, "reviewed", lock_timeout=1)
        assert time.monotonic() - started < 8
    finally:
        done.set()
        thread.join()
    assert se.tag(ds, "reviewed", lock_timeout=5) == ds.version, "once let go, the call goes through"


def test_the_command_line_takes_lock_timeout_for_tag_and_gc(
    home: Path, refs_held_by_another_process: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    from stable_explore.cli import main

    lock, holder = refs_held_by_another_process
    started = time.monotonic()
    assert main(["--home", str(home), "tag", "d", "reviewed", "--lock-timeout", "0.5"]) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert err.startswith("stable-explore tag: gave up after waiting")
    assert f"{lock}, held by process {holder}" in err
    with pytest.warns(GcProblemWarning):
        assert main(["--home", str(home), "gc", "d", "--lock-timeout", "0.5"]) == 1
