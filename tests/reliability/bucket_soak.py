"""A chaos soak on a real bucket: machines that save, build, tag, collect and read one dataset while faults hit.

Each participant is a process with its own local cache (a machine of its own) on one bucket prefix:
a saver (relabel and save, tagging every third version), a builder (builds of a generator whose
argument changes), a collector (``gc`` with ``keep`` 0, 1 or 2) and a reader (``se.load`` and reads of
rows it can check: column ``x`` of row ``i`` is ``i`` in every version). Each prints one JSON line per
operation. Meanwhile faults are injected at random: a participant is SIGKILLed (and started again),
or the S3 server is stopped (SIGSTOP) for a few seconds.

What counts (:func:`soak`): operations and their kinds; faults; **lost** (an acknowledged tag that no
longer points at a whole version, or ``latest`` not whole at the end); **dangling** refs; **wrong**
reads (a row read that is not what was written); **raw** exceptions (not a ``StableExploreError``);
**hangs** (an operation that took longer than ``hang_after`` seconds). Errors of the library's own kinds
during a fault (a server that does not answer, a lease lost, a lock timed out) are expected and counted
apart, as is a version ``gc`` took while a reader had it open.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ROWS = 40

PARTICIPANT = r"""
import json, os, random, sys, time, traceback
import stable_explore as se
role, url, until, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
ROWS = int(sys.argv[5])
rng = random.Random(seed)
FEATURES = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))

def rows(n):
    for i in range(n):
        yield {"label": i % 2, "x": i}

def report(op, started, **extra):
    print(json.dumps({"role": role, "op": op, "s": round(time.monotonic() - started, 3), **extra}), flush=True)

def run_once():
    started = time.monotonic()
    try:
        if role == "saver":
            ds = se.load(url + "/d")
            i = rng.randrange(len(ds))
            tag = f"t{rng.randrange(1000)}" if rng.random() < 0.33 else None
            saved = ds.relabel({i: 1 - ds[i]["label"]}).save(message="soak", tag=tag, progress=False)
            report("save", started, version=saved.version, tag=tag)
        elif role == "builder":
            n = rng.choice([ROWS, ROWS + 1, ROWS + 2])
            built = se.build(rows, FEATURES, name="d", args=(n,), home=url, progress=False)
            report("build", started, version=built.version, rows=n)
        elif role == "gc":
            se.gc("d", keep=rng.choice([0, 1, 2]), home=url)
            report("gc", started)
        else:
            ds = se.load(url + "/d")
            picks = [rng.randrange(len(ds)) for _ in range(3)]
            wrong = [i for i in picks if ds[i]["x"] != i]
            report("read", started, version=ds.version, wrong=len(wrong))
    except se.StableExploreError as exc:
        report("error", started, kind=type(exc).__name__, message=str(exc)[:400])
    except Exception as exc:
        report("raw", started, kind=type(exc).__name__, message=traceback.format_exc()[-1500:])

while time.time() < until:
    run_once()
    time.sleep(rng.random() * 0.2)
"""

ROLES = ("saver", "builder", "gc", "reader")


@dataclass
class SoakReport:
    """What a soak did and found."""

    seconds: float = 0.0
    operations: dict[str, int] = field(default_factory=dict)
    expected_errors: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    wrong: int = 0
    raw: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (what the benchmark prints)."""
        return {
            "seconds": round(self.seconds, 1),
            "operations": self.operations,
            "expected_errors": self.expected_errors,
            "faults": self.faults,
            "lost": self.lost,
            "dangling": self.dangling,
            "wrong": self.wrong,
            "raw": self.raw[:10],
            "hangs": self.hangs[:10],
        }


def _start(role: str, url: str, until: float, cache: Path, seed: int, env: dict[str, str]) -> subprocess.Popen[str]:
    cache.mkdir(parents=True, exist_ok=True)
    with (cache.parent / f"{cache.name}.stderr").open("a") as log:  # kept for a look after a failed soak
        return subprocess.Popen(
            [sys.executable, "-c", PARTICIPANT, role, url, str(until), str(seed), str(ROWS)],
            env={**env, "STABLE_EXPLORE_CACHE": str(cache)},
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )


def soak(
    url: str,
    server_pid: int,
    scratch: Path,
    *,
    seconds: float,
    seed: int = 0,
    stop_server: tuple[float, float] = (3.0, 8.0),
    hang_after: float = 60.0,
    gap: tuple[float, float] = (2.0, 6.0),
) -> SoakReport:
    """Run every participant on ``url`` for ``seconds`` with faults; check every ref against what was acknowledged.

    ``gap``: the seconds between one fault's end and the next one (a short soak packs them closer)."""
    import stable_explore as se

    rng = random.Random(seed)
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))
    se.build([{"label": i % 2, "x": i} for i in range(ROWS)], features, name="d", home=url, progress=False)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "STABLE_EXPLORE_LEASE_SECONDS": "5",
        "STABLE_EXPLORE_LOCK_TIMEOUT": "60",
    }
    report = SoakReport()
    started = time.monotonic()
    until = time.time() + seconds
    procs: dict[str, subprocess.Popen[str]] = {}
    outputs: list[str] = []
    for n, role in enumerate(ROLES):
        procs[role] = _start(role, url, until, scratch / f"machine-{role}", seed * 10 + n, env)
    restarts = 0
    while time.time() < until - 5:
        time.sleep(rng.uniform(*gap))
        if time.time() >= until - 5:
            break
        if rng.random() < 0.5:
            role = rng.choice(ROLES)
            victim = procs[role]
            if victim.poll() is None:
                victim.kill()
                report.faults["SIGKILL " + role] = report.faults.get("SIGKILL " + role, 0) + 1
            out, _ = victim.communicate()
            if victim.returncode not in (0, -signal.SIGKILL):
                report.raw.append(f"the {role} exited with {victim.returncode} (see its .stderr in the scratch folder)")
            outputs.append(out)
            restarts += 1
            procs[role] = _start(role, url, until, scratch / f"machine-{role}", seed * 10 + 100 + restarts, env)
        else:
            pause = rng.uniform(*stop_server)
            os.killpg(server_pid, signal.SIGSTOP)
            try:
                time.sleep(pause)
            finally:
                os.killpg(server_pid, signal.SIGCONT)
            report.faults["SIGSTOP server"] = report.faults.get("SIGSTOP server", 0) + 1
    for role, proc in procs.items():
        try:
            out, _ = proc.communicate(timeout=hang_after + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            report.hangs.append(f"the {role} did not end within the hang limit after the soak")
        if proc.returncode not in (0, -signal.SIGKILL):
            report.raw.append(f"the {role} exited with {proc.returncode} (see its .stderr in the scratch folder)")
        outputs.append(out)
    report.seconds = time.monotonic() - started
    acknowledged_tags: dict[str, str] = {}
    for line in "".join(outputs).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event["op"]
        if event["s"] > hang_after:
            report.hangs.append(f"{event['role']} {kind} took {event['s']} s")
        if kind == "error":
            report.expected_errors[event["kind"]] = report.expected_errors.get(event["kind"], 0) + 1
            continue
        if kind == "raw":
            report.raw.append(f"{event['role']}: {event['kind']}: {event['message']}")
            continue
        report.operations[kind] = report.operations.get(kind, 0) + 1
        if kind == "read":
            report.wrong += int(event["wrong"])
        if kind == "save" and event.get("tag"):
            acknowledged_tags[event["tag"]] = event["version"]
    _check_refs(url, acknowledged_tags, report)
    return report


def _check_refs(url: str, acknowledged_tags: dict[str, str], report: SoakReport) -> None:
    """Every ref points at a whole version; every acknowledged tag still points at the version it was given
    (unless a later save moved the same tag)."""
    import stable_explore as se
    from stable_explore.catalog.remote import RemoteCatalog

    catalog = RemoteCatalog(url)
    refs = catalog.refs("d")
    ids = set(catalog.version_ids("d"))
    for tag, version in refs.items():
        if version not in ids:
            report.dangling.append(f"{tag} -> {version}")
            continue
        try:
            se.verify(f"d@{version}", home=url)
        except se.StableExploreError as exc:
            report.lost.append(f"{tag} -> {version}: {exc}")
    for tag, version in acknowledged_tags.items():
        if tag not in refs:
            report.lost.append(f"acknowledged tag {tag} -> {version} is gone")
    if "latest" not in refs:
        report.lost.append("latest is gone")
