"""Benchmark: the file-state fingerprint of a data folder, and the cache decision that uses it.

Workload: N files (default 100,000; 64 bytes each) in 100 class folders of 1,000 files (the
``root/<class>/*.jpg`` layout), read warm (the directory entries and inodes are in the page cache,
as on a notebook's second run).

* ``file_state(root)``: the recursive listing (os.scandir: relative path, size, mtime_ns) and its digest;
* the same with ``check_content=True`` (every file's bytes hashed too);
* a raw baseline in the same run: ``os.walk`` + ``os.stat`` of every file, without hashing;
* a whole cache hit of ``se.build(folder_generator, ..., args=(root,))``: fingerprint the generator,
  list the folder, find the version (the generator is not run);
* memory of the duplicate-key check at 10M rows (``KeyCheck``: 64-bit key hashes, sorted runs spilled
  past 1M), with tracemalloc.

Target (informational; the exit status is always 0): the warm listing of 100k files under 1 s.

Run::

    python benchmarks/bench_fingerprint.py           # 100k files
    python benchmarks/bench_fingerprint.py --quick   # 10k files, 1M keys
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stable_explore as se
from _report import mb, ms, rule, verdict
from stable_explore.catalog.fingerprints.file_state import file_state


def best_of(repeats: int, run: Callable[[], Any]) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def make_tree(root: Path, files: int, per_folder: int = 1000) -> None:
    payload = b"x" * 64
    for i in range(files):
        folder = root / f"class-{i // per_folder:04d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True)
        (folder / f"img-{i:07d}.jpg").write_bytes(payload)


def raw_walk(root: Path) -> int:
    count = 0
    for directory, _, names in os.walk(root):
        for name in names:
            os.stat(os.path.join(directory, name))  # noqa: PTH116, PTH118
            count += 1
    return count


def folder(root: str):
    for path in sorted(Path(root).glob("*/*.jpg")):
        yield path.name, {"label": path.parent.name, "size": path.stat().st_size}


def key_check_memory(rows: int) -> tuple[int, float]:
    import numpy as np
    import pyarrow as pa

    from stable_explore.storage.write.key_check import KeyCheck

    spill = Path(tempfile.mkdtemp())
    check = KeyCheck(spill)
    batch = 100_000
    tracemalloc.start()
    started = time.perf_counter()
    try:
        for first in range(0, rows, batch):
            keys = np.arange(first, first + batch, dtype=np.int64)
            check.add([], pa.array(keys), first)  # int keys: the batch's own duplicate check is Arrow's job
        assert len(check.repeated_hashes()) == 0
        spill.rmdir()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="10k files, 1M keys")
    args = parser.parse_args()
    files = 10_000 if args.quick else args.files
    keys = 1_000_000 if args.quick else args.keys
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        started = time.perf_counter()
        make_tree(root, files)
        print(f"made {files:,} files in {files // 1000} folders in {time.perf_counter() - started:.1f} s")
        raw_walk(root)  # warm the caches
        rule(f"file-state fingerprint of {files:,} files (warm), best / median of 5")
        state = file_state(str(root))
        assert state is not None
        assert state.files == files
        listing_best, listing_median = best_of(5, lambda: file_state(str(root)))
        content_best, content_median = best_of(3, lambda: file_state(str(root), check_content=True))
        raw_best, raw_median = best_of(5, lambda: raw_walk(root))
        print(f"file_state (size, mtime_ns)        {ms(listing_best):>12} / {ms(listing_median):>12}")
        print(f"file_state(check_content=True)     {ms(content_best):>12} / {ms(content_median):>12}")
        print(f"raw os.walk + os.stat (no digest)  {ms(raw_best):>12} / {ms(raw_median):>12}")
        print(f"ratio ours / raw walk              {listing_best / raw_best:>12.2f}x")
        print(f"target: listing < 1 s              {verdict(listing_best < 1.0):>12}")

        rule("a cache hit of se.build(folder, args=(root,)), best / median of 5")
        home = Path(tmp) / "home"
        features = se.Features(label=se.Value("string"), size=se.Value("int64"))
        started = time.perf_counter()
        se.build(folder, features, args=(str(root),), home=home, progress=False)
        print(f"first build ({files:,} rows)        {ms(time.perf_counter() - started):>12}")

        def hit() -> None:
            ds = se.build(folder, features, args=(str(root),), home=home, progress=False)
            assert ds.build_info.startswith("reused"), ds.build_info

        hit_best, hit_median = best_of(5, hit)
        print(f"cache hit                          {ms(hit_best):>12} / {ms(hit_median):>12}")

    rule(f"duplicate-key check at {keys:,} rows (64-bit hashes; tracemalloc peak)")
    peak, seconds = key_check_memory(keys)
    print(f"peak memory                        {mb(peak):>12}  ({peak / keys:.1f} bytes a row)")
    print(f"time (hashing, sort, compare)      {ms(seconds):>12}")


if __name__ == "__main__":
    main()
