"""Benchmark: the image signals and the kNN-based ones at a million rows (issue 39), in one run.

Workload: N (default 1,000,000; ``--rows``) small grey JPEGs (``--side``, default 32x32) made from
scikit-learn's digits with noise, encoded in chunks and cached with ``se.build``. Then, each step timed
with the peak memory it took:

* ``pixel_embeddings`` (16x16 grey pixels, PCA to 32 dims + 1 residual), serial and ``num_proc=2``
  (``cache=False``: both compute);
* ``perceptual_hashes`` (pHash), ``image_stats``, serial;
* ``embedding_outliers`` (k=10) and ``neighbor_label_issues`` (k=10) on those embeddings: above
  ``APPROXIMATE_ROWS`` (50k) rows both use pynndescent's approximate neighbours;
* recall@10 of those approximate neighbours (the very ones ``neighbor_label_issues`` used) against the
  exact neighbours of a random sample of ``--queries`` (2,000) rows, found by brute force against every
  row (numpy); the time of exact neighbours for all rows is *estimated* from the sample's time (rows /
  queries times it), not measured.

Memory: the process's peak resident set during each step (Linux's VmHWM, reset before each step through
``/proc/self/clear_refs``), and for the ``num_proc=2`` step the largest worker's (``ru_maxrss`` of the
children: the largest of any worker so far). The load average at the start and end is printed: the
figures come from a shared machine.

The exit status is always 0: the figures are the result.

Run::

    python benchmarks/bench_signals_million.py                  # 1M rows
    python benchmarks/bench_signals_million.py --rows 100000    # the same at 100k, for the scale
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stable_explore as se
from _report import MB, rule
from stable_explore import signals

CHUNK = 10_000


def jpeg_batches(count: int, side: int, seed: int) -> Iterator[Any]:
    """``count`` noisy digit JPEGs as record batches of ``CHUNK`` rows (image bytes, label)."""
    from PIL import Image as PILImage
    from sklearn.datasets import load_digits

    digits = load_digits()
    bases = np.stack(
        [np.asarray(PILImage.fromarray((d * 15).astype(np.uint8)).resize((side, side))) for d in digits.images]
    ).astype(np.int16)
    rng = np.random.default_rng(seed)
    for start in range(0, count, CHUNK):
        which = np.arange(start, min(start + CHUNK, count)) % len(bases)
        noisy = np.clip(bases[which] + rng.integers(-12, 13, size=(len(which), side, side)), 0, 255).astype(np.uint8)
        images = []
        for pixels in noisy:
            buffer = io.BytesIO()
            PILImage.fromarray(pixels).save(buffer, format="JPEG", quality=85)
            images.append(buffer.getvalue())
        yield {"image": images, "label": digits.target[which].tolist()}


class Peak:
    """Time, CPU time and peak resident set of this process and its workers while the ``with`` block runs.

    The workers (a pool's processes, children or grandchildren of this one) are sampled every 0.2 s
    with psutil: their peak is the largest sum of their resident sets seen, their CPU time the last seen.
    """

    def __enter__(self) -> Peak:
        import threading

        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
            self.reset = True
        except OSError:
            self.reset = False
        self.workers_rss = 0
        self.workers_cpu: dict[int, float] = {}
        self.done = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()
        self.cpu_started = time.process_time()
        self.started = time.perf_counter()
        return self

    def _sample(self) -> None:
        try:
            import psutil
        except ImportError:
            return
        me = psutil.Process()
        while not self.done.wait(0.2):
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                    times = child.cpu_times()
                    self.workers_cpu[child.pid] = times.user + times.system
                except psutil.Error:
                    continue
            self.workers_rss = max(self.workers_rss, total)

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        self.cpu = time.process_time() - self.cpu_started
        self.done.set()
        self.sampler.join()
        self.cpu += sum(self.workers_cpu.values())
        self.own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if self.reset:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.own = int(line.split()[1]) * 1024

    def memory(self, workers: bool = False) -> str:
        text = f"{self.own / MB:6,.0f} MB"
        if not self.reset:
            text += " (process peak so far)"
        if workers:
            text += f" + workers {self.workers_rss / MB:,.0f} MB"
        return text


def line(name: str, peak: Peak, rows: int, workers: bool = False, scaled: str = "") -> None:
    per = peak.seconds * 100_000 / rows
    cpu = f"cpu {peak.cpu:8.1f} s"
    memory = peak.memory(workers)
    print(f"{name:<50} {peak.seconds:8.1f} s {per:8.1f} s/100k{scaled:<1}  {cpu}  peak {memory}", flush=True)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def run(rows: int, side: int, queries: int, home: str, k: int = 10, seed: int = 0) -> None:

    print(f"start: {time.strftime('%Y-%m-%d %H:%M:%S')}; {load()}", flush=True)
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=[str(d) for d in range(10)]))
    with Peak() as made:
        ds = se.build(
            jpeg_batches, features, name="million", args=(rows, side, seed), batched=True, home=home, progress=False
        )
    print(f"made and cached {len(ds):,} JPEGs of {side}x{side} in {made.seconds:.1f} s (peak {made.memory()})")

    rule(f"{rows:,} images of {side}x{side} grey JPEG: wall seconds, per 100k scaled, CPU seconds, peak resident set")
    with Peak() as step:
        embeddings = signals.pixel_embeddings(ds, cache=False, progress=False)
    line("pixel_embeddings (16x16, 32 dims + 1)", step, rows)
    with Peak() as step:
        parallel = signals.pixel_embeddings(ds, num_proc=2, cache=False, progress=False)
    line("pixel_embeddings num_proc=2", step, rows, workers=True)
    same = bool(np.array_equal(embeddings, parallel))
    del parallel
    with Peak() as step:
        signals.perceptual_hashes(ds, cache=False, progress=False)
    line("perceptual_hashes phash", step, rows)
    with Peak() as step:
        signals.image_stats(ds, cache=False, progress=False)
    line("image_stats", step, rows)

    print("cpu: this process's CPU time plus its workers' (on a loaded machine, wall time is mostly waiting)")
    print(f"pixel_embeddings num_proc=2 equal to serial: {same}")
    neighbour_steps(ds, embeddings, queries, k, seed)
    print(f"end: {time.strftime('%Y-%m-%d %H:%M:%S')}; {load()}", flush=True)


def neighbour_steps(ds: se.CachedDataset, embeddings: np.ndarray, queries: int, k: int, seed: int) -> None:
    """``neighbor_label_issues``, the recall of the neighbours it used, then ``embedding_outliers``."""
    from stable_explore.signals import neighbors

    rows = len(ds)
    approximate = rows > neighbors.APPROXIMATE_ROWS
    how = "pynndescent, approximate" if approximate else "scikit-learn, exact"
    rule(f"k={k} neighbours of {rows:,} embeddings of {embeddings.shape[1]} dims ({how})")
    used: list[np.ndarray] = []  # the neighbours neighbor_label_issues is given, kept for the recall below
    original = neighbors.nearest_neighbors

    def keeping(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        distances, positions = original(*args, **kwargs)
        used.append(positions)
        return distances, positions

    import stable_explore.signals.labels as labels_module

    labels_module.nearest_neighbors = keeping  # type: ignore[assignment]
    try:
        with Peak() as step:
            issues = signals.neighbor_label_issues(ds, embeddings, k=k)
    finally:
        labels_module.nearest_neighbors = original
    line(f"neighbor_label_issues k={k}", step, rows, scaled="*")
    print(f"{issues.num_rows:,} rows whose neighbours vote for another label", flush=True)

    sample = np.sort(np.random.default_rng(seed + 1).choice(rows, size=min(queries, rows), replace=False))
    with Peak() as step:
        _, exact = neighbors.nearest_neighbors(embeddings, k, rows=sample, backend="numpy")
    found = used[0][sample]
    recall = float(np.mean([len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(exact, found, strict=True)]))
    estimate = step.seconds * rows / len(sample)
    estimate_cpu = step.cpu * rows / len(sample)
    print(f"recall@{k} of those neighbours ({how}) against exact, over {len(sample):,} random rows: {recall:.4f}")
    print(
        f"exact neighbours of the {len(sample):,} rows against all {rows:,} (numpy brute force): "
        f"{step.seconds:.1f} s (cpu {step.cpu:.1f} s), peak {step.memory()}"
    )
    print(
        f"exact neighbours of all {rows:,} rows, ESTIMATED from the sample ({rows:,} / {len(sample):,} x its time): "
        f"{estimate:,.0f} s ({estimate / 3600:.1f} h; cpu {estimate_cpu:,.0f} s)",
        flush=True,
    )
    with Peak() as step:
        outliers = signals.embedding_outliers(ds, embeddings, k=k)
    line(f"embedding_outliers k={k}", step, rows, scaled="*")
    print(f"{outliers.num_rows:,} outlier scores")
    print("* k-NN grows faster than linearly with n: the scaled figure is not a rate that holds at other sizes")


def label_batches(count: int) -> Iterator[Any]:
    """Row i's label: the digit of scikit-learn's digit i modulo 1,797 (as the embeddings below are made)."""
    from sklearn.datasets import load_digits

    target = load_digits().target
    for start in range(0, count, 100_000):
        yield {"label": target[np.arange(start, min(start + 100_000, count)) % len(target)].tolist()}


def neighbours_only(rows: int, queries: int, home: str, k: int = 10, seed: int = 0) -> None:
    """The neighbour steps alone, on noisy digits reduced to 32 dims by PCA (``bench_signals.py``'s kNN workload)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    print(f"start: {time.strftime('%Y-%m-%d %H:%M:%S')}; {load()}", flush=True)
    features = se.Features(label=se.ClassLabel(names=[str(d) for d in range(10)]))
    with Peak() as made:
        ds = se.build(label_batches, features, name="labels", args=(rows,), batched=True, home=home, progress=False)
        rng = np.random.default_rng(seed)
        digits = load_digits()
        which = np.arange(rows) % len(digits.data)
        base = digits.data[which] + rng.normal(0, 2.0, (rows, digits.data.shape[1]))
        embeddings = PCA(32, random_state=0).fit_transform(base).astype(np.float32)
        del base
    print(f"made {rows:,} rows and their embeddings in {made.seconds:.1f} s (peak {made.memory()})", flush=True)
    neighbour_steps(ds, embeddings, queries, k, seed)
    print(f"end: {time.strftime('%Y-%m-%d %H:%M:%S')}; {load()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--side", type=int, default=32, help="pixels of the square JPEGs")
    parser.add_argument("--queries", type=int, default=2_000, help="rows whose exact neighbours give the recall")
    parser.add_argument("--home", help="catalog folder (kept: a second run reuses the JPEGs); default a temporary one")
    parser.add_argument(
        "--neighbours-only", action="store_true", help="only the neighbour steps, on synthetic 32-dim embeddings"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = args.home or scratch
        if args.neighbours_only:
            neighbours_only(args.rows, args.queries, home)
        else:
            run(args.rows, args.side, args.queries, home)


if __name__ == "__main__":
    main()
