"""Benchmark: saving edits as versions and comparing versions, against raw pyarrow and Hugging Face ``datasets``.

Workload: N rows (default 100,000) of a 64x64 JPEG, a class label (10 names), a float and a string, cached in
shards of about 32 MB (so the cache has ~10 shards).

* save after relabelling 10 rows: ours (``ds.relabel({...}).save()``) against HF ``Dataset.map`` that relabels
  the same rows (HF writes a new cache file for the whole table), in seconds and bytes written;
* compare identical versions (the version ids match: no data read);
* compare a version with 1% of rows relabelled and 0.1% dropped: ours ``se.compare`` (keys and row hashes, then
  the changed rows only) against raw pyarrow doing the same join itself (``Table.join`` on key, comparing the
  stored row hashes) over the very same shard files.

Targets (informational; the exit status is always 0): identical compare <= 5 ms; 1%/0.1% compare <= 300 ms;
saving 10 relabelled rows writes <= 2 shards.

The same-run table (``--table``; see ``_edit_systems.py``): ours, Lance (``pylance``), Deep Lake and raw Arrow
IPC on the same rows (a key, a 10-class label, a float, a 256-byte payload) at 100k and 2M rows (and 10M with
``--full``): a save of 10 relabels (time, bytes written, peak RSS delta, and its anonymous part: ``anon``), a
drop of 10 rows, the median save of a chain of 50 such saves (time, and bytes written: ``KB med``), a full
read of the first version and of the 50th (a fresh open each time; the median of 5, after a warm-up read and a
garbage collection), and the time to find what changed between the first and the last (``cmp v1``) and between
the last and its parent (``cmp v49``: two versions that share most of their data). Each system's imports
happen in its build (ours: the edit and compare code too, which load lazily), so the first save and the
first compare time the work, not Python loading code.

Run::

    python benchmarks/bench_versions.py           # 100k rows
    python benchmarks/bench_versions.py --quick   # 10k rows
    python benchmarks/bench_versions.py --tiny-save 2000000   # what a label-only save writes, field by field
    python benchmarks/bench_versions.py --table   # the same-run table at 100k and 2M rows (--full: 10M too)
    python benchmarks/bench_versions.py --table --rows 100000 --only stable-explore   # one system, one size
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cache import LABEL_NAMES, keyed_rows, make_jpegs, our_features

_READ_REPEATS = 5  # reads of a version are a few ms at 100k rows: a median of 5 on a shared machine


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    gc.collect()  # garbage of earlier steps (a chain of saves) is not collected inside the timed calls
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def hf_relabel(n: int, jpegs: list[bytes], rows: list[int], work: Path) -> tuple[float, int]:
    """HF: build the same table, then relabel rows with Dataset.map; seconds and bytes the map wrote."""
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(work / "hf-home"))
    import datasets

    datasets.disable_progress_bars()
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=LABEL_NAMES),
            "score": datasets.Value("float32"),
            "caption": datasets.Value("string"),
            "key": datasets.Value("string"),
        }
    )

    def generate() -> Any:
        for key, example in keyed_rows(n, jpegs):
            yield {**example, "image": {"bytes": example["image"], "path": None}, "key": key}

    ds = datasets.Dataset.from_generator(generate, features=features, cache_dir=str(work / "hf-cache"))
    ds = ds.cast_column("image", datasets.Image(decode=False))
    targets = set(rows)
    before = dir_bytes(work / "hf-cache")
    start = time.perf_counter()

    def relabel(batch: dict[str, list[Any]], indices: list[int]) -> dict[str, list[Any]]:
        batch["label"] = [1 if i in targets else v for i, v in zip(indices, batch["label"], strict=True)]
        return batch

    mapped = ds.map(relabel, with_indices=True, batched=True, load_from_cache_file=False)
    seconds = time.perf_counter() - start
    assert mapped[rows[0]]["label"] == 1
    return seconds, dir_bytes(work / "hf-cache") - before


def raw_compare(paths_a: list[Path], paths_b: list[Path]) -> int:
    """Raw pyarrow: read key and row-hash columns of both, join on key, count changed rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.ipc as ipc

    def load(paths: list[Path]) -> Any:
        tables = [ipc.open_file(pa.memory_map(str(p))).read_all().select(["__key__", "__row_hash__"]) for p in paths]
        return pa.concat_tables(tables)

    a, b = load(paths_a), load(paths_b).rename_columns(["__key__", "hash_b"])
    joined = a.join(b, "__key__", join_type="inner")
    return int(pc.sum(pc.not_equal(joined["__row_hash__"], joined["hash_b"])).as_py() or 0)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def _kb(count: int) -> str:
    return f"{count / 1024:9.1f}"


def metadata_breakdown(cache_dir: Path) -> str:
    """What the ``_metadata.json`` a save rewrote is made of, per large field (compact JSON bytes)."""
    import json

    path = cache_dir / "_metadata.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    big = ("batch_digests", "content_runs", "row_segments")
    parts = {k: len(json.dumps(raw.get(k), separators=(",", ":"))) for k in big}
    rest = path.stat().st_size - sum(parts.values())
    fields = ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in parts.items())
    return f"_metadata.json {path.stat().st_size / 1024:.1f} KB: {fields}, the rest {rest / 1024:.1f} KB"


def new_files(cache_dir: Path) -> str:
    """The files of a version that are not hard links to an earlier version's, with their sizes."""
    fresh = [p for p in sorted(cache_dir.iterdir()) if p.is_file() and p.stat().st_nlink == 1]
    return ", ".join(f"{p.name} {p.stat().st_size / 1024:.1f} KB" for p in fresh)


def tiny_save(n: int) -> None:
    """A label-only save of 10 rows over ``n`` tiny rows (a key, a label, a float): bytes written, and by what."""
    import stable_explore as se
    from _edit_systems import NAMES, folder_bytes

    work = Path(tempfile.mkdtemp(prefix="bench-tiny-save-"))
    try:
        features = se.Features(label=se.ClassLabel(names=NAMES), score=se.Value("float32"))
        rows = ((f"row-{i:08d}", {"label": i % 10, "score": (i % 97) / 7}) for i in range(n))
        ds = se.build(rows, features, name="tiny", home=work, progress=False, shard_size="64MB")
        before = folder_bytes(work)
        edits = dict.fromkeys(np.random.default_rng(5).choice(n, 10, replace=False).tolist(), 3)
        start = time.perf_counter()
        saved = ds.relabel(edits).save(progress=False)
        seconds = time.perf_counter() - start
        written = folder_bytes(work) - before
        kb = written / 1024
        print(f"label-only save of 10 rows at {n:,} tiny rows: {seconds * 1000:.1f} ms, {kb:.1f} KB written")
        print(f"  {metadata_breakdown(saved.cache_dir)}")
        print(f"  new files: {new_files(saved.cache_dir)}")
        sizes, times = [], []
        rng = np.random.default_rng(6)
        for i in range(20):  # a chain: the runs file is rewritten only once its splices grow past a limit
            edits = dict.fromkeys(rng.choice(n, 10, replace=False).tolist(), i % 10)
            before = folder_bytes(work)
            start = time.perf_counter()
            saved = saved.relabel(edits).save(progress=False)
            times.append(time.perf_counter() - start)
            sizes.append(folder_bytes(work) - before)
        print(f"  a chain of 20 such saves: median {statistics.median(sizes) / 1024:.1f} KB "
              f"(mean {statistics.mean(sizes) / 1024:.1f}, max {max(sizes) / 1024:.1f}), "
              f"median {statistics.median(times) * 1000:.1f} ms")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table_run(n: int, chain: int, only: str | None = None) -> None:
    """One size of the same-run table: every installed system, the same rows and edits."""
    from _edit_systems import cleanup, folder_bytes, rows_table, systems

    work = Path(tempfile.mkdtemp(prefix="bench-edits-"))
    try:
        data = rows_table(n)
        print(f"\n{n:,} rows; a chain of {chain} saves of 10 relabels (times in ms, bytes in KB, RSS in MB)")
        print(f"  {'system':16} {'build s':>8} {'save10':>8} {'KB':>9} {'RSS':>6} {'anon':>6} {'drop10':>8} {'KB':>9} "
              f"{'chain med':>9} {'KB med':>8} {'read v1':>8} {'read v50':>8} {'ratio':>6} "
              f"{'cmp v1':>8} {'cmp v49':>8}")  # fmt: skip
        for system in systems(work, data, only):
            rng = np.random.default_rng(5)
            size = n
            build_s, _, _ = system.timed(system.build)
            ten = rng.choice(size, 10, replace=False).tolist()
            save_s, save_b, save_m = system.timed(partial(system.relabel, ten, 1))
            save_anon = system.last_anon
            drop_rows = rng.choice(size, 10, replace=False).tolist()
            drop_s, drop_b, _ = system.timed(partial(system.drop, drop_rows))
            size -= 10
            times, written = [], []
            for i in range(chain):
                rows = rng.choice(size, 10, replace=False).tolist()
                system.tidy()
                before = folder_bytes(system.root)  # untimed, like tidy
                start = time.perf_counter()
                system.relabel(rows, i % 10)
                times.append(time.perf_counter() - start)
                written.append(folder_bytes(system.root) - before)
            read_first = median_ms(system.read_first, _READ_REPEATS)
            read_latest = median_ms(system.read_latest, _READ_REPEATS)
            start = time.perf_counter()
            changed = system.compare_first_and_latest()
            compare_s = time.perf_counter() - start
            assert changed > 0
            start = time.perf_counter()
            assert system.compare_previous_and_latest() > 0
            parent_s = time.perf_counter() - start
            print(f"  {system.name:16} {build_s:8.1f} {_ms(save_s)} {_kb(save_b)} {save_m / 2**20:6.1f} "
                  f"{save_anon / 2**20:6.1f} {_ms(drop_s)} "
                  f"{_kb(drop_b)} {_ms(statistics.median(times)):>9} {statistics.median(written) / 1024:8.1f} "
                  f"{read_first:8.1f} {read_latest:8.1f} "
                  f"{read_latest / read_first:6.2f} {_ms(compare_s)} {_ms(parent_s)}", flush=True)  # fmt: skip
    finally:
        cleanup(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--table", action="store_true", help="the same-run table against Lance, Deep Lake, raw IPC")
    parser.add_argument("--full", action="store_true", help="with --table: 10M rows too")
    parser.add_argument(
        "--tiny-save", type=int, metavar="ROWS", help="only: what a save of 10 relabels writes at ROWS tiny rows"
    )
    parser.add_argument("--chain", type=int, default=50, help="with --table: saves in the chain (default 50)")
    parser.add_argument("--only", metavar="SYSTEM", help='with --table: one system, e.g. "stable-explore"')
    args = parser.parse_args()
    if args.tiny_save:
        tiny_save(args.tiny_save)
        return
    if args.table:
        print("stable-explore edits: the same-run table (a shared machine: figures are noisy)")
        for n in [args.rows] if args.rows else [100_000, 2_000_000, *([10_000_000] if args.full else [])]:
            table_run(n, args.chain, args.only)
        return
    n = args.rows or (10_000 if args.quick else 100_000)
    repeats = 5 if args.quick else 15
    import stable_explore as se

    work = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    try:
        jpegs = make_jpegs()
        home = work / "home"
        start = time.perf_counter()
        ds = se.build(keyed_rows(n, jpegs), our_features(), name="bench", home=home, progress=False, shard_size="32MB")
        print(f"stable-explore versions benchmark: {n:,} rows, {ds.num_shards} shards, built in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        rng = np.random.default_rng(7)

        print("\nSAVE after relabelling 10 rows")
        ten = sorted(rng.choice(n, 10, replace=False).tolist())
        start = time.perf_counter()
        saved = ds.relabel(dict.fromkeys(ten, LABEL_NAMES[1])).save(message="ten", progress=False)
        ours_s = time.perf_counter() - start
        new_files = [p for p in saved.cache_dir.glob("*.arrow") if p.stat().st_nlink == 1]
        ours_bytes = sum(p.stat().st_size for p in new_files)
        hf_s, hf_bytes = hf_relabel(n, jpegs, ten, work)
        all_files = list(saved.cache_dir.glob("*.arrow"))
        print(f"  ours: {ours_s * 1000:8.1f} ms, {len(new_files)} of {len(all_files)} shard files written "
              f"({ours_bytes / 1024:.1f} KB; the rest are the parent's files, linked)")  # fmt: skip
        print(f"        {saved.build_info}")
        print(f"        {metadata_breakdown(saved.cache_dir)}")
        print(f"  HF Dataset.map: {hf_s * 1000:8.1f} ms, {hf_bytes / 2**20:7.1f} MB written")
        print(f"  ours/HF time {ours_s / hf_s:.2f}x, bytes {ours_bytes / max(hf_bytes, 1):.3f}x")
        print(f"  target: <= 2 shards written: {'PASS' if len(new_files) <= 2 else 'MISS'}")

        print("\nCOMPARE identical versions (same id: no data read)")
        same = se.load("bench", home=home)
        identical_ms = median_ms(lambda: se.compare(saved, same), repeats * 4)
        print(f"  ours: {identical_ms:.3f} ms   target <= 5 ms: {'PASS' if identical_ms <= 5 else 'MISS'}")

        print("\nCOMPARE after relabelling 1% and dropping 0.1%")
        relabel_rows = rng.choice(n, n // 100, replace=False)
        drop_rows = np.setdiff1d(rng.choice(n, n // 1000, replace=False), relabel_rows)
        labels = ds.with_format("arrow").column("label").to_numpy()
        changes = {int(r): int((labels[r] + 1) % len(LABEL_NAMES)) for r in relabel_rows}
        edited = ds.relabel(changes).drop(drop_rows.tolist()).save(message="1% relabel, 0.1% drop", progress=False)
        diff = se.compare(ds, edited)
        assert len(diff.rows.changed) == len(relabel_rows), (len(diff.rows.changed), len(relabel_rows))
        assert len(diff.rows.removed) == len(drop_rows)
        ours_ms = median_ms(lambda: se.compare(ds, edited), repeats)
        raw_ms = median_ms(lambda: raw_compare(ds._meta.shard_paths, edited._meta.shard_paths), repeats)
        print(f"  ours se.compare: {ours_ms:8.1f} ms  ({diff.summary()[:90]})")
        print(f"  raw pyarrow join on key + row hash only: {raw_ms:8.1f} ms")
        print(f"  ours/raw {ours_ms / raw_ms:.2f}x (ours also reads the changed rows to name fields, label counts)")
        print(f"  target <= 300 ms: {'PASS' if ours_ms <= 300 else 'MISS'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
