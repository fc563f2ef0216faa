"""Benchmark: a CPU-bound build serially, with ``num_proc=2``, and on a Dask cluster of 2 workers, in one run.

The workload is what a user's image generator does: for each input file, decode a JPEG (crops of
scikit-learn's two sample photos, 300-420 px, written once before any timing), resize it to 256x256
(Lanczos), and re-encode it as a JPEG; the row is the new bytes, a label and the path. The generator
yields plain dicts (no keys), so a parallel build also re-keys the rows of every task but the first
(the serial build's keys are the row indices): the full price of matching the serial version id.

Each round builds the same files three ways, each into a fresh home, the order rotating every round:

* serial: ``se.build(gen, F, kwargs={"files": files})``;
* num_proc=2: a fresh pool of 2 worker processes per build (its start-up is part of the time, as it is
  for a user; they fork from the fork server, which a warm-up build started, as a user's first build would);
* Dask: ``executor=client.get_executor()`` on a ``LocalCluster(n_workers=2, threads_per_worker=1)``
  started once before the rounds (a cluster outlives builds), ``num_proc=2`` tasks.

Every build's version id is checked to be the serial one. Reported: median and range per way, the
speed-up (serial median / parallel median, and paired within each round), then the fixed and per-task
overheads, measured with tasks of one tiny row: the pool's start-up (a ``num_proc=2`` build minus a serial
one) and the wall time each extra task adds (32 tasks minus 2, over 30) on a warm pool and on Dask.

Target (informational; the script always exits 0): >= 1.6x serial with 2 workers (>= 0.8x per worker).
The machine these figures come from may be shared: read the ranges, not only the medians.

Run::

    python benchmarks/bench_parallel.py            # 1200 images, 3 rounds: a few minutes on 2 cores
    python benchmarks/bench_parallel.py --quick    # 300 images, 2 rounds
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # workers import this module by name: bench_parallel

import numpy as np
from PIL import Image as PILImage

import stable_explore as se
from _report import ms, rule, verdict

FEATURES = se.Features(image=se.Image(), label=se.ClassLabel(names=["china", "flower"]), path=se.Value("string"))
SIDE = 256


def make_files(count: int, folder: Path, seed: int = 0) -> list[str]:
    """JPEG crops of the two sample photos (427x640), 300-420 px square, flipped at random."""
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    rng = np.random.default_rng(seed)
    files = []
    for i in range(count):
        photo = photos[i % 2]
        size = int(rng.integers(300, 421))
        top, left = int(rng.integers(0, 427 - size + 1)), int(rng.integers(0, 640 - size + 1))
        crop = photo[top : top + size, left : left + size]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        path = folder / f"{['china', 'flower'][i % 2]}_{i:05d}.jpg"
        PILImage.fromarray(np.ascontiguousarray(crop)).save(path, "JPEG", quality=92)
        files.append(str(path))
    return files


def resized(files: list[str]) -> Iterator[dict[str, Any]]:
    """The user's generator: decode, resize to 256 px, re-encode."""
    for name in files:
        with PILImage.open(name) as image:
            small = image.convert("RGB").resize((SIDE, SIDE), PILImage.Resampling.LANCZOS)
        buffer = io.BytesIO()
        small.save(buffer, "JPEG", quality=90)
        yield {"image": buffer.getvalue(), "label": Path(name).name.split("_")[0], "path": Path(name).name}


def tiny(items: list[int]) -> Iterator[dict[str, Any]]:
    for item in items:
        yield {"image": TINY_JPEG, "label": item % 2, "path": str(item)}


def _tiny_jpeg() -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (8, 8)).save(buffer, "JPEG")
    return buffer.getvalue()


TINY_JPEG = _tiny_jpeg()


def timed(build: Callable[[], se.CachedDataset]) -> tuple[float, str]:
    started = time.perf_counter()
    ds = build()
    return time.perf_counter() - started, ds.version


class CpuMeter:
    """CPU seconds (user + system) this process and every process under it (workers, Dask's) spent meanwhile.

    A thread samples every process's CPU times every 0.1 s; a process that ends between samples loses at
    most its last 0.1 s. On a shared machine this is the figure other loads do not change much: how much
    work a build is, wherever it ran.
    """

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.running = True

    def _sample(self) -> None:
        for process in [self.me, *self.me.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except Exception:
                continue
            self.first.setdefault(process.pid, times.user + times.system)
            self.last[process.pid] = times.user + times.system

    def _loop(self) -> None:
        while self.running:
            self._sample()
            time.sleep(0.1)

    def __enter__(self) -> CpuMeter:
        import threading

        self._sample()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


def build_in(source: Any, items: list[Any], **options: Any) -> se.CachedDataset:
    home = tempfile.mkdtemp(prefix="bench-parallel-home-")
    return se.build(source, FEATURES, name="bench", kwargs={"files" if source is resized else "items": items},
                    home=home, progress=False, **options)  # fmt: skip


def summary(times: list[float]) -> str:
    return f"median {statistics.median(times):6.2f} s  (range {min(times):.2f}-{max(times):.2f}, n={len(times)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="300 images, 2 rounds")
    parser.add_argument("--images", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    count = args.images or (300 if args.quick else 1200)
    rounds = args.rounds or (2 if args.quick else 3)

    import distributed

    folder = Path(tempfile.mkdtemp(prefix="bench-parallel-files-"))
    files = make_files(count, folder)
    megabytes = sum(Path(f).stat().st_size for f in files) / 2**20
    print(f"{count} JPEG crops ({megabytes:.1f} MB), {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"load average before: {os.getloadavg()[0]:.2f}")  # fmt: skip
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = distributed.Client(cluster)
    dask = client.get_executor()
    try:
        build_in(tiny, list(range(4)), executor=dask, num_proc=2)  # workers import stable-explore once
        build_in(tiny, list(range(4)), num_proc=2)  # the fork server starts (once per session)
        ways: dict[str, Callable[[], se.CachedDataset]] = {
            "serial": lambda: build_in(resized, files),
            "num_proc=2": lambda: build_in(resized, files, num_proc=2),
            "dask, 2 workers": lambda: build_in(resized, files, executor=dask, num_proc=2),
        }
        times: dict[str, list[float]] = {way: [] for way in ways}
        cpu: dict[str, list[float]] = {way: [] for way in ways}
        paired: dict[str, list[float]] = {way: [] for way in ways if way != "serial"}
        versions: set[str] = set()
        names = list(ways)
        for round_index in range(rounds):
            order = names[round_index % 3 :] + names[: round_index % 3]
            this_round = {}
            for way in order:
                with CpuMeter() as meter:
                    seconds, version = timed(ways[way])
                cpu[way].append(meter.seconds)
                this_round[way] = seconds
                times[way].append(seconds)
                versions.add(version)
            for way in paired:
                paired[way].append(this_round["serial"] / this_round[way])
            print(f"round {round_index + 1} ({' -> '.join(order)}): "
                  + ", ".join(f"{way} {this_round[way]:.2f} s" for way in names))  # fmt: skip

        rule(f"{count} images: decode, resize to {SIDE} px, re-encode (serial generator ~ single core)")
        for way in names:
            print(f"{way:>16}: {summary(times[way])}  {count / statistics.median(times[way]):6.1f} images/s")
        print(f"same version id in every build: {len(versions) == 1}")
        serial_cpu = statistics.median(cpu["serial"])
        for way in names:
            work = statistics.median(cpu[way])
            print(f"{way:>16}: {work:6.2f} CPU s in all processes ({work / serial_cpu:.2f}x serial's)", end="")
            print("" if way == "serial" else f"; on 2 free cores: {2 * serial_cpu / work:.2f}x serial at best")
        serial = statistics.median(times["serial"])
        for way, ratios in paired.items():
            speedup = serial / statistics.median(times[way])
            print(f"{way:>16}: {speedup:.2f}x serial ({speedup / 2:.2f}x per worker); paired per round "
                  f"{', '.join(f'{r:.2f}x' for r in ratios)}  [target >= 1.6x: {verdict(speedup >= 1.6)}]")  # fmt: skip

        rule("overheads (tasks of one tiny row; medians of 3)")
        serial_tiny = statistics.median(timed(lambda: build_in(tiny, [1, 2]))[0] for _ in range(3))
        spawn_tiny = statistics.median(timed(lambda: build_in(tiny, [1, 2], num_proc=2))[0] for _ in range(3))
        print(f"a num_proc=2 pool's start-up (2 workers forked from the warm fork server): "
              f"{ms(spawn_tiny - serial_tiny)} per build")  # fmt: skip
        with ProcessPoolExecutor(2) as pool:
            build_in(tiny, list(range(4)), executor=pool, num_proc=2)  # warm
            for label, executor in (("warm process pool", pool), ("Dask", dask)):
                per_task = _per_task(executor)
                print(f"each task beyond the first two, {label}: {ms(per_task)} of wall time (2 workers)")
    finally:
        client.close()
        cluster.close()
    print()
    print("model: T(N) ~ T_start + T_gen / N + T_join + tasks * t_task / N, where T_gen is the serial generator time,")
    print("T_start the pool start-up (0 for a running cluster), T_join the driver's join (reads the key and row-hash")
    print("columns, 16 bytes a row; renames files) plus, for rows without keys, one parallel copy of the shards of")
    print("tasks after the first. Speed-up -> N while T_gen / N dominates.")


def _per_task(executor: Executor) -> float:
    """Wall time each extra task adds: (32 tasks - 2 tasks) / 30, medians of 3 builds of 64 tiny rows each."""
    items = list(range(64))
    two = statistics.median(timed(lambda: build_in(tiny, items, executor=executor, num_proc=2))[0] for _ in range(3))
    many = statistics.median(timed(lambda: build_in(tiny, items, executor=executor, num_proc=32))[0] for _ in range(3))
    return (many - two) / 30


if __name__ == "__main__":
    main()
