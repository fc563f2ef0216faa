"""Kills and injected I/O failures in a real child process, and the check that the catalog survived them.

The workload (:data:`WORKLOAD`) runs on a copy of a pristine home holding one version of ``t``:
a build of a new version (moves ``latest``), a saved edit of it with a tag (hard links, a new
shard), and ``gc`` (renames and deletes). A trial either SIGKILLs the child at a random moment
(:func:`kill_trial`) or makes the N-th call of one file-system operation fail
(:func:`fault_trial`): ``raise`` mode raises ``OSError(EIO)`` from it, ``crash`` mode SIGKILLs
the process inside it. Operations: ``write`` (``os.write``, ``os.pwrite``, ``Path.write_text`` /
``write_bytes``), ``fsync``, ``rename``, ``replace``, ``link``, ``unlink`` (``os.*``, which
``pathlib`` and ``shutil`` call).

Survived (:func:`check_home`) means: ``se.load("t")`` opens and verifies and is one of the
versions the workload can make (or the old one); every ref points at a whole version; and after
``se.gc()`` (which sweeps what the dead child left) ``fsck`` finds no problem at all.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ("write", "fsync", "rename", "replace", "link", "unlink")

WORKLOAD = r"""
import errno, json, os, pathlib, signal, sys
op, nth, mode, home = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
counts = {}

def inject(name, owner, attr):
    real = getattr(owner, attr)

    def wrapped(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        if name == op and counts[name] == nth:
            if mode == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            target = args[0] if args and isinstance(args[0], (str, os.PathLike)) else None
            raise OSError(errno.EIO, "injected I/O error", None if target is None else os.fspath(target))
        return real(*args, **kwargs)

    setattr(owner, attr, wrapped)

for attr in ("write", "pwrite"):
    inject("write", os, attr)
for attr in ("write_text", "write_bytes"):
    inject("write", pathlib.Path, attr)
for name in ("fsync", "rename", "replace", "link", "unlink"):
    inject(name, os, name)

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers

import time
outcome = {"ok": True}
started = time.perf_counter()
try:
    print("started", flush=True)
    ds = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 400}, home=home, progress=False, batch_size=100,
                  shard_size=4096)
    ds.set(3, "x", -3).save(message="fix row 3", tag="clean", progress=False)
    se.gc("t", keep=0, home=home)
except Exception as exc:
    outcome = {"ok": False, "error": type(exc).__name__, "ours": isinstance(exc, se.StableExploreError),
               "message": str(exc)[:300]}
outcome["counts"] = counts
outcome["seconds"] = time.perf_counter() - started
print(json.dumps(outcome), flush=True)
"""


def pristine_home(root: Path) -> Path:
    """A home with one version of ``t`` (200 rows), built in this process."""
    import stable_explore as se
    from tests.sources import NUM_FEATURES, numbers

    home = root / "pristine"
    se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 200}, home=home, progress=False)
    return home


def _run(home: Path, op: str, nth: int, mode: str, kill_after: float | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", WORKLOAD, op, str(nth), mode, str(home)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if kill_after is not None:
        proc.stdout.readline()  # "started": imports done, the workload begins
        time.sleep(kill_after)
        proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {"ok": False, "error": "killed"}
    result["returncode"] = proc.returncode
    if proc.returncode not in (0, -signal.SIGKILL):
        result.update(ok=False, error="child failed", message=err[-2000:])
    return result


def count_operations(pristine: Path, scratch: Path) -> dict[str, int]:
    """How many calls of each operation the workload makes (a run with nothing injected)."""
    return measure_workload(pristine, scratch)[0]


def measure_workload(pristine: Path, scratch: Path) -> tuple[dict[str, int], float]:
    """The calls of each operation the workload makes, and how long it runs (seconds, after its imports)."""
    home = _fresh(pristine, scratch)
    result = _run(home, "none", 0, "raise")
    assert result["ok"], result
    counts: dict[str, int] = result["counts"]
    return counts, float(result["seconds"])


def _fresh(pristine: Path, scratch: Path) -> Path:
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(pristine, scratch, symlinks=True)
    return scratch


def check_home(home: Path, allowed: set[str] | None = None) -> str | None:
    """None when the catalog survived; else what is wrong (one line)."""
    import warnings

    import stable_explore as se

    try:
        warnings.simplefilter("ignore", se.LockWaitWarning)  # "took over the lock of a killed process": expected
        ds = se.load("t", home=home)
        se.verify(ds)
        if allowed is not None and ds.version not in allowed:
            return f"latest is {ds.version}, which the workload cannot have made"
        first = se.fsck(home=home)
        # what gc settles is not damage: leftovers of the dead child, a source record of a deleted version
        settled = ("left behind", "moved aside", "gc drops the record")
        damaged = [str(p) for p in first.problems if not any(s in str(p) for s in settled)]
        if damaged:
            return f"fsck before gc: {damaged[0]}"
        se.gc(home=home)
        report = se.fsck(home=home)
        if not report.ok:
            return f"fsck after gc: {report.problems[0]}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def fault_trial(pristine: Path, scratch: Path, op: str, nth: int, mode: str) -> tuple[bool, dict[str, Any]]:
    """One injected failure; (survived, what the child reported, with the check's finding)."""
    home = _fresh(pristine, scratch)
    result = _run(home, op, nth, mode)
    problem = check_home(home)
    result["problem"] = problem
    return problem is None, result


def kill_trial(pristine: Path, scratch: Path, rng: random.Random, longest: float) -> tuple[bool, dict[str, Any]]:
    """One SIGKILL at a random moment of the workload (0 to ``longest`` seconds after it starts; give about
    the workload's duration, :func:`measure_workload`, so that nearly every kill lands inside it)."""
    home = _fresh(pristine, scratch)
    result = _run(home, "none", 0, "raise", kill_after=rng.uniform(0, longest))
    problem = check_home(home)
    result["problem"] = problem
    return problem is None, result


# One process loops builds of two sources (n=10 and n=20: each build moves latest, and each later
# build of the same source is a cache hit on a version no ref may point at), the other loops gc.
LOOP = """
import json, sys, time
import stable_explore as se
from tests.sources import NUM_FEATURES, numbers

home, role, seconds, rounds = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[5])
started = time.monotonic()
done, failures = 0, []
# at least `rounds` rounds however slow the machine, and at most a minute past the time asked for
while (time.monotonic() < started + seconds or done < rounds) and time.monotonic() < started + seconds + 60:
    try:
        if role == "build":
            n = 10 if done % 2 == 0 else 20
            ds = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": n}, home=home, progress=False)
            assert len(ds) == n and ds[n - 1]["x"] == n - 1, (len(ds), n)
            assert len(se.load("t", home=home)) in (10, 20)
        else:
            se.gc("t", keep=int(sys.argv[4]), home=home)
    except Exception as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
    done += 1
print(json.dumps({"done": done, "failures": failures[:5], "failed": len(failures)}))
"""


def gc_race(home: Path, seconds: float, keep: int, rounds: int = 0) -> tuple[dict[str, object], dict[str, object]]:
    """Run the builder and the collector side by side for ``seconds``, and each for at least ``rounds``
    rounds (a slow machine runs longer rather than test less); return what each reported."""
    import stable_explore as se
    from tests.sources import NUM_FEATURES, numbers

    se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 5}, home=home, progress=False)  # the dataset exists
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOOP, str(home), role, str(seconds), str(keep), str(rounds)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("build", "gc")
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=seconds + 120)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results[0], results[1]
