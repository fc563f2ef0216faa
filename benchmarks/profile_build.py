"""Profile: where each microsecond per row of a build goes, stage by stage (CPU time), rows and column batches.

The data is ``bench_peers.py``'s (``--case images``: a distinct ~1.9 KB JPEG, a 10-class label, a float32;
``--case small``: a string key, a label, a float32, 256 bytes). The builds run ``se.build`` in this process
after a warm-up build of a tenth of the rows (imports and first-call costs are not a build's), with the
stages of the writing path wrapped by timers; each figure is the median of ``--repeat`` builds. A stage's
time is *exclusive*: a stage called inside another counts for itself only. CPU is the thread's CPU time
(``time.thread_time``), which the load of a shared machine distorts less than wall time; stages of the
helper thread (batch digests, fsync) run beside the main thread, so the main thread's stages add up to
about the build's wall time and the helper's do not.

The user's generator is timed alone (the rows consumed without a build) and taken out of the intake.

Run::

    python benchmarks/profile_build.py                   # 100k image rows: rows, then columns
    python benchmarks/profile_build.py --case small
    python benchmarks/profile_build.py --kind rows --cprofile 30   # also the top 30 functions by own time
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import Data


class Stages:
    """Exclusive CPU and wall time per stage, per thread (a stage inside another counts for itself only)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = collections.defaultdict(float)
        self.wall: dict[str, float] = collections.defaultdict(float)
        self.thread: dict[str, str] = {}
        self._local = threading.local()

    def _stack(self) -> list[list[float]]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        stack: list[list[float]] = self._local.stack
        return stack

    def enter(self) -> None:
        self._stack().append([time.thread_time(), time.perf_counter(), 0.0, 0.0])

    def leave(self, stage: str) -> None:
        cpu0, wall0, child_cpu, child_wall = self._stack().pop()
        cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
        self.cpu[stage] += cpu - child_cpu
        self.wall[stage] += wall - child_wall
        self.thread.setdefault(stage, threading.current_thread().name)
        if self._stack():
            self._stack()[-1][2] += cpu
            self._stack()[-1][3] += wall

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave(stage)

        return timed

    def wrap_generator(self, stage: str, fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = fn(*args, **kwargs)
            end = object()
            while True:
                self.enter()
                try:
                    item = next(inner, end)
                finally:
                    self.leave(stage)
                if item is end:
                    return
                yield item

        return timed


class _TimedHasher:
    """A file hasher whose updates are timed as their own stage."""

    def __init__(self, stages: Stages, inner: Any) -> None:
        self._stages, self._inner = stages, inner
        self.update = stages.wrap("file digest (xxh3-128, as written)", inner.update)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_ORIGINALS: list[tuple[Any, str, Any]] = []


def uninstrument() -> None:
    """Put back what :func:`instrument` wrapped."""
    while _ORIGINALS:
        owner, attr, fn = _ORIGINALS.pop()
        setattr(owner, attr, fn)


def instrument(stages: Stages) -> None:
    """Wrap the writing path's stages (module attributes and methods, looked up where they are called)."""
    from stable_explore.catalog import build
    from stable_explore.schema import image
    from stable_explore.storage.format import hashing
    from stable_explore.storage.write import encode, intake, key_check, shards, writer

    patches: list[tuple[Any, str, str]] = [
        (intake.Intake, "chunks", "intake (items -> columns)"),
        (encode.BatchEncoder, "encode", "encode (columns -> Arrow)"),
        (image, "check_image_column", "image header check"),
        (encode, "row_hashes", "row hashes"),
        (encode.BatchEncoder, "key_array", "key column"),
        (hashing.ContentDigest, "update", "content digest (runs)"),
        (key_check.KeyCheck, "add", "duplicate-key check"),
        (key_check.KeyCheck, "repeated_hashes", "duplicate-key check"),
        (writer, "_confirm_duplicates", "duplicate-key check"),
        (writer._Rebatcher, "add", "rebatch"),
        (shards.ShardWriter, "write", "IPC write"),
        (shards.ShardWriter, "close_shard", "IPC write"),
        (shards.ShardWriter, "finish", "wait for the helper thread"),
        (shards, "batch_digests_of", "batch digests (helper thread)"),
        (shards, "write_batches_file", "batch digests (helper thread)"),
        (shards, "fsync_path", "fsync shards (helper thread)"),
        (shards, "_start_writeback_of", "writeback requests (helper thread)"),
        (build, "publish_version", "publish (metadata, fsync, rename, refs)"),
        (build, "plan_source", "plan (source fingerprint)"),
    ]
    for owner, attr, stage in patches:
        if not hasattr(owner, attr):
            print(f"(no {owner.__name__}.{attr} to time: the stage {stage!r} is not measured)", file=sys.stderr)
            continue
        fn = getattr(owner, attr)
        _ORIGINALS.append((owner, attr, fn))
        generator = attr in {"chunks", "add"} and owner in (intake.Intake, writer._Rebatcher)
        setattr(owner, attr, (stages.wrap_generator if generator else stages.wrap)(stage, fn))
    original_hasher = shards.new_file_hasher
    _ORIGINALS.append((shards, "new_file_hasher", original_hasher))
    shards.new_file_hasher = lambda: _TimedHasher(stages, original_hasher())  # type: ignore[assignment]


def source_seconds(data: Data, kind: str) -> float:
    """CPU seconds of consuming the source alone (what the user's generator costs, without a build)."""
    items = data.rows() if kind == "rows" else data.our_batches()
    started = time.thread_time()
    collections.deque(items, maxlen=0)
    return time.thread_time() - started


def build_once(data: Data, kind: str, home: Path, batch_size: int = 1000) -> tuple[float, float]:
    """(wall, process CPU) seconds of one ``se.build`` of ``data`` (rows or column batches)."""
    import stable_explore as se

    items = data.rows() if kind == "rows" else data.our_batches()
    wall, cpu = time.perf_counter(), time.process_time()
    se.build(items, data.features(), name="profile", home=home, progress=False, batch_size=batch_size)
    return time.perf_counter() - wall, time.process_time() - cpu


def profile(case: str, n: int, kind: str, top: int, root: Path, batch_size: int = 1000, repeat: int = 5) -> None:
    """Build ``repeat`` times (after a warm-up) and print each stage's median CPU and wall microseconds per row."""
    warm = Data(case, max(1, n // 10))
    build_once(warm, kind, root / "warm")
    data = Data(case, n)
    source = min(source_seconds(data, kind) for _ in range(3))
    runs: list[Stages] = []
    totals: list[tuple[float, float]] = []
    profiler = cProfile.Profile() if top else None
    for attempt in range(repeat):
        stages = Stages()
        instrument(stages)
        if profiler is not None and attempt == repeat - 1:
            profiler.enable()
        totals.append(build_once(data, kind, root / f"home-{attempt}", batch_size))
        if profiler is not None:
            profiler.disable()
        uninstrument()
        stages.cpu["intake (items -> columns)"] -= source
        stages.wall["intake (items -> columns)"] -= source
        runs.append(stages)
        shutil.rmtree(root / f"home-{attempt}", ignore_errors=True)
    load = os.getloadavg()
    wall = statistics.median(w for w, _ in totals)
    cpu = statistics.median(c for _, c in totals)
    print(
        f"\n{kind} build of {n:,} rows ({case}); median of {repeat} builds in one process after a warm-up; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"wall {wall:.3f} s, process CPU {cpu:.3f} s ({cpu / n * 1e6:.2f} us/row)")
    print("| stage | thread | CPU us/row | wall us/row |\n| --- | --- | ---: | ---: |")
    print(f"| user's source (timed alone, not ours) | main | {source / n * 1e6:.2f} | {source / n * 1e6:.2f} |")
    names = {stage: run.thread[stage] for run in runs for stage in run.cpu}
    med_cpu = {stage: statistics.median(run.cpu.get(stage, 0.0) for run in runs) for stage in names}
    med_wall = {stage: statistics.median(run.wall.get(stage, 0.0) for run in runs) for stage in names}
    main_wall = 0.0
    for stage in sorted(names, key=lambda s: (names[s] != "MainThread", -med_cpu[s])):
        helper = names[stage] != "MainThread"
        main_wall += 0.0 if helper else med_wall[stage]
        where = "helper" if helper else "main"
        print(f"| {stage} | {where} | {med_cpu[stage] / n * 1e6:.2f} | {med_wall[stage] / n * 1e6:.2f} |")
    print(f"| (main thread, untimed: build set-up, loop) | main | - | {(wall - main_wall - source) / n * 1e6:.2f} |")
    print(f"| **build** | | {cpu / n * 1e6:.2f} (process) | {wall / n * 1e6:.2f} |")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["images", "small"], default="images")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=1000, help="se.build's batch_size")
    parser.add_argument("--kind", choices=["rows", "columns", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=5, help="builds measured (medians)")
    parser.add_argument("--cprofile", type=int, default=0, metavar="TOP", help="also print cProfile's top functions")
    args = parser.parse_args()
    kinds = ["rows", "columns"] if args.kind == "both" else [args.kind]
    for kind in kinds:  # a fresh process each, so that the wrappers of one do not stack on the other's
        if len(kinds) > 1:
            import subprocess

            command = [sys.executable, __file__, "--case", args.case, "--rows", str(args.rows), "--kind", kind]
            command += ["--batch-size", str(args.batch_size), "--repeat", str(args.repeat)]
            subprocess.run([*command, "--cprofile", str(args.cprofile)], check=True)
            continue
        root = Path(tempfile.mkdtemp(prefix="profile-build-"))
        try:
            profile(args.case, args.rows, kind, args.cprofile, root, args.batch_size, args.repeat)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
