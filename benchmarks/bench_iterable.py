"""Benchmark: rows/s of one epoch through ``ds.to_iterable()``, vs the plain dataset and Hugging Face's iterable.

The workload is bench_cache.py's: rows of a 64x64 JPEG (512 distinct, cycled), a ClassLabel, a float32 and
a string; N rows (20k by default, 5k with ``--quick``) in shard files of 4 MB (about 10 files at 20k).
HF ``datasets`` builds the same rows with ``Dataset.from_generator`` (offline, in the run's temp dir) and
reads them with ``to_iterable_dataset(num_shards=<our file count>)``. One epoch, every row consumed, for:

- ``plain``: ``for row in ds`` (the map-style dataset: decoded rows, 1,000 at a time, in order);
- ``iterable``: ``for row in ds.to_iterable()``; ``iterable+shuffle``: with ``shuffle=True, buffer_size=1000``;
- ``loader w0`` / ``loader w2``: ``DataLoader(ds.to_iterable(shuffle=True, ...), batch_size=64,
  num_workers=0 | 2, collate_fn=<keep the list>)``; w2 includes starting the two worker processes (fork),
  as an epoch without ``persistent_workers`` does;
- the same five for HF: ``hf_ds`` iterated, ``hf_ds.to_iterable_dataset(...)``, ``.shuffle(seed, buffer_size=1000)``,
  and the two loaders over it.

Two image modes, both sides alike: ``bytes`` (ours ``with_format("python")``, HF ``Image(decode=False)``:
no image decoded) and ``pil`` (ours ``"pil"``, HF ``Image()``; the consumer calls ``img.load()`` on every
image, which HF's decoding has already done).

Rounds run every contender once in a rotated order; medians and ranges (min-max) over the rounds are
printed, with ratios against ``plain`` and ours/HF for each configuration. Informational: exits 0.

Run::

    python benchmarks/bench_iterable.py            # 20k rows, 3 rounds, about a minute on 2 cores
    python benchmarks/bench_iterable.py --quick    # 5k rows, 3 rounds
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from _report import rule as _rule
from bench_cache import _set_offline_env, hf_features, keyed_rows, make_jpegs, our_features

DEFAULT_ROWS = 20_000
QUICK_ROWS = 5_000
ROUNDS = 3
BUFFER = 1000
BATCH = 64
SHARD_SIZE = "4MB"
CONFIGS = ("plain", "iterable", "iterable+shuffle", "loader w0", "loader w2")

JPEGS: list[bytes] = []


def keep(rows: list[Any]) -> list[Any]:
    """Collate: the rows as they are (both sides pay the same transfer from workers)."""
    return rows


def consume(rows: Iterable[Any], load: bool) -> int:
    count = 0
    for row in rows:
        if load:
            row["image"].load()
        count += 1
    return count


def batches(loader: Iterable[list[Any]]) -> Iterator[Any]:
    for batch in loader:
        yield from batch


def contenders(ds: Any, hf: Any, num_shards: int, load: bool) -> dict[str, Callable[[], int]]:
    from torch.utils.data import DataLoader

    def ours_loader(workers: int) -> Callable[[], int]:
        view = ds.to_iterable(shuffle=True, seed=0, buffer_size=BUFFER)
        return lambda: consume(batches(DataLoader(view, batch_size=BATCH, num_workers=workers, collate_fn=keep)), load)

    def hf_iterable(shuffle: bool) -> Any:
        iterable = hf.to_iterable_dataset(num_shards=num_shards)
        return iterable.shuffle(seed=0, buffer_size=BUFFER) if shuffle else iterable

    def hf_loader(workers: int) -> Callable[[], int]:
        view = hf_iterable(True)
        return lambda: consume(batches(DataLoader(view, batch_size=BATCH, num_workers=workers, collate_fn=keep)), load)

    return {
        "ours plain": lambda: consume(ds, load),
        "ours iterable": lambda: consume(ds.to_iterable(), load),
        "ours iterable+shuffle": lambda: consume(ds.to_iterable(shuffle=True, seed=0, buffer_size=BUFFER), load),
        "ours loader w0": ours_loader(0),
        "ours loader w2": ours_loader(2),
        "hf plain": lambda: consume(hf, load),
        "hf iterable": lambda: consume(hf_iterable(False), load),
        "hf iterable+shuffle": lambda: consume(hf_iterable(True), load),
        "hf loader w0": hf_loader(0),
        "hf loader w2": hf_loader(2),
    }


def measure(runs: dict[str, Callable[[], int]], n: int, rounds: int) -> dict[str, list[float]]:
    """Rows/s of each contender per round; the order rotates each round so none always goes first."""
    names = list(runs)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ * len(names) // rounds
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            count = runs[name]()
            seconds = time.perf_counter() - started
            assert count == n, f"{name} yielded {count} rows, expected {n}"
            rates[name].append(n / seconds)
    return rates


def report(mode: str, rates: dict[str, list[float]]) -> None:
    _rule(f"images as {mode}: rows/s of one epoch (median of {len(next(iter(rates.values())))}, range)")
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{'configuration':<22}{'ours':>12}{'range':>20}{'x plain':>9}{'HF':>12}{'range':>20}{'ours/HF':>9}")
    for config in CONFIGS:
        ours, hf = rates[f"ours {config}"], rates[f"hf {config}"]
        print(
            f"{config:<22}{median[f'ours {config}']:>12,.0f}{f'{min(ours):,.0f}-{max(ours):,.0f}':>20}"
            f"{median[f'ours {config}'] / median['ours plain']:>8.2f}x"
            f"{median[f'hf {config}']:>12,.0f}{f'{min(hf):,.0f}-{max(hf):,.0f}':>20}"
            f"{median[f'ours {config}'] / median[f'hf {config}']:>8.2f}x"
        )


def run(n: int, rounds: int) -> None:
    import datasets
    import pyarrow as pa
    import torch

    import stable_explore as se

    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="bench_iterable-"))
    try:
        _set_offline_env(root)
        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
        JPEGS[:] = make_jpegs()
        ds = se.build(
            keyed_rows(n, JPEGS), our_features(), name="rows", home=root / "home", progress=False,
            shard_size=SHARD_SIZE,
        )  # fmt: skip

        def generate() -> Iterator[dict[str, Any]]:
            for _, row in keyed_rows(n, JPEGS):
                yield {**row, "image": {"bytes": row["image"], "path": None}}

        hf = datasets.Dataset.from_generator(
            generate, features=hf_features(), cache_dir=str(root / "hf"), fingerprint=f"bench-iterable-{n}"
        )
        print(
            f"Python {platform.python_version()}, pyarrow {pa.__version__}, torch {torch.__version__}, "
            f"datasets {datasets.__version__}, {os.cpu_count()} cores (shared: other jobs may run)"
        )
        print(f"{n:,} rows, {ds.num_shards} shard files of ours ({SHARD_SIZE}); HF iterable with as many shards")
        for mode, load in (("bytes", False), ("pil", True)):
            ours = ds.with_format("python" if mode == "bytes" else "pil")
            theirs = hf.cast_column("image", datasets.Image(decode=mode == "pil"))
            report(mode, measure(contenders(ours, theirs, ds.num_shards, load), n, rounds))
        print()
        print(f"total benchmark time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows instead of {DEFAULT_ROWS:,}")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds of every contender (default {ROUNDS})")
    args = parser.parse_args(argv)
    run(QUICK_ROWS if args.quick else DEFAULT_ROWS, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
