"""Benchmark: peak memory over the import baseline of saves and full reads of 200k image rows.

The workload: N rows (200k by default, ``--rows N``) of a small distinct JPEG (about 2 KB: one of 512
photo-like 64x64 JPEGs, each row's bytes made distinct by a comment segment holding its row number), a
ClassLabel and a float32, built once into shard files of the default size. Each operation then runs in
a fresh Python process that first imports what it needs (stable_explore, pyarrow, numpy, PIL; pandas and
datasets where used), takes its memory as the baseline, and reports two peaks over it:

- ``rss``: the peak resident set (the kernel's high-water mark, reset after the baseline). It counts the
  pages of memory-mapped shard files a read touched: those are the page cache's and reclaimable;
- ``anon``: the peak anonymous memory (``RssAnon``, sampled every millisecond): what the process itself
  holds (Arrow buffers, Python objects), which a user pays whatever else runs.

Operations on ours (each loads the built version by its id, so every save starts from the same rows):

- ``relabel x10``, ``set x10``, ``drop x10``: ten edits of rows spread over the dataset, then ``save()``;
- ``compaction``: every other row of the first 6,000 dropped, so the save rewrites the fragmented file;
- ``drop 60%``: the first 60% of the rows dropped and one value set: the save rewrites the rest of a file it
  uses less than half of;
- ``for row in ds``: every row decoded (``with_format("python")``: images stay bytes);
- ``to_iterable``: every row of ``ds.to_iterable()`` (same format);
- ``shuffled batches of 64``: every row, in a random order, 64 at a time (as a shuffling ``DataLoader`` reads);
- ``to_pandas 10k``: ``ds.select(range(10_000)).to_pandas()``.

The three workloads of issue 34 (peaks a user saw), also ``--issue34`` (median of ``--repeat`` runs, each fresh):

- ``relabel 10% + drop 5%``: 20k relabels and 10k drops spread over the 200k rows (a tenth and a twentieth
  of ``--rows``), then ``save()``;
- ``image_stats 9000x9000``: ``image_stats`` of a dataset of one 9000 x 9000 JPEG (built once beside the rows);
- ``outliers + votes 100k``: ``embedding_outliers`` and ``neighbor_label_issues`` on the offline pixel
  embeddings of the first 100k rows (``--embed-rows``, at most ``--rows``).

Builds (``--builds``): the peak growth of a build itself, each in a fresh process whose rows are made
lazily by the generator (so they are never all in memory): image rows (the rows above, from rows and
from column batches of 1,000) at 20k and 100k, and tiny rows (an int label and a float; from rows and
from column batches) at 1M and 10M. The goal: the growth from the smaller build to the bigger one under
16 MB (peak RSS, and anonymous memory).

Comparisons, the same rows: ``pyarrow.ipc`` reading the same shard files batch by batch (memory-mapped,
each batch's rows as Python values, as ours gives them), and Hugging Face ``datasets`` (built from the
same rows with ``Image(decode=False)``, then every row iterated). Informational: exits 0.

Run::

    python benchmarks/bench_memory.py              # 200k rows: a build of about a minute, then ~10 processes
    python benchmarks/bench_memory.py --rows 20000
    python benchmarks/bench_memory.py --issue34 --repeat 3 --keep /tmp/mem   # issue 34's three, medians of 3
    python benchmarks/bench_memory.py --builds     # the builds' own growth: 20k -> 100k images, 1M -> 10M tiny rows
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import distinct_jpeg, make_jpegs, status_kb

DEFAULT_ROWS = 200_000
NAMES = [f"class-{i}" for i in range(10)]
MB = 1024 * 1024


# --- the rows -----------------------------------------------------------------------------------------


def rows(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    jpegs = make_jpegs()
    for i in range(n):
        yield f"row-{i:07d}", {"image": distinct_jpeg(jpegs, i), "label": (i * 7) % 10, "score": i * 0.001}


def build(root: Path, n: int) -> str:
    """Build the rows into ``root / "home"``; returns the version's ref."""
    import stable_explore as se
    from stable_explore import ClassLabel, Features, Image, Value

    features = Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"))
    ds = se.build(rows(n), features, name="mem", home=root / "home", progress=False)
    return ds.ref


def build_hf(root: Path, n: int) -> None:
    """The same rows as a Hugging Face dataset (images kept as bytes), saved to ``root / "hf"``."""
    import datasets

    datasets.disable_progress_bar()
    features = datasets.Features(
        {
            "image": datasets.Image(decode=False),
            "label": datasets.ClassLabel(names=NAMES),
            "score": datasets.Value("float32"),
        }
    )

    def generate() -> Iterator[dict[str, Any]]:
        for _, row in rows(n):
            yield {"image": {"bytes": row["image"], "path": None}, "label": row["label"], "score": row["score"]}

    hf = datasets.Dataset.from_generator(generate, features=features, cache_dir=str(root / "hf_cache"))
    hf.save_to_disk(str(root / "hf"))


# --- measuring in a fresh process -----------------------------------------------------------------------


class Peak:
    """The peak RSS (kernel high-water mark, reset at start) and sampled peak RssAnon of this process, in KB."""

    def __init__(self) -> None:
        self.base_rss = status_kb("VmRSS")
        self.base_anon = status_kb("RssAnon")
        self.anon = self.base_anon
        self._stop = threading.Event()
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self.anon = max(self.anon, status_kb("RssAnon"))

    def stop(self) -> dict[str, float]:
        self.anon = max(self.anon, status_kb("RssAnon"))
        self._stop.set()
        self._thread.join()
        hwm = status_kb("VmHWM") if self.hwm_reset else status_kb("VmRSS")
        return {
            "peak_mb": hwm / 1024,
            "base_rss_mb": self.base_rss / 1024,
            "rss_mb": (hwm - self.base_rss) / 1024,
            "anon_mb": (self.anon - self.base_anon) / 1024,
        }


def _ours(ref: str, home: str) -> Any:
    import stable_explore as se

    return se.load(ref, home=home)


def _spread(n: int, count: int = 10) -> list[int]:
    return [i * (n // count) + 7 for i in range(count)]


def op_relabel(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    ds.relabel({row: NAMES[(row + 3) % 10] for row in _spread(len(ds))}).save(progress=False)


def op_set(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    draft = ds.drop([])
    for row in _spread(len(ds)):
        draft = draft.set(row, "score", -1.0)
    draft.save(progress=False)


def op_drop(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    ds.drop(_spread(len(ds))).save(progress=False)


def op_compaction(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    saved = ds.drop(list(range(0, min(len(ds), 6000), 2))).save(progress=False)
    print(saved.build_info, file=sys.stderr)


def op_rewrite(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    saved = ds.drop(list(range(len(ds) * 6 // 10))).set(len(ds) - 1, "score", -1.0).save(progress=False)
    print(saved.build_info, file=sys.stderr)


def op_edit_save(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    n = len(ds)
    relabels = {row: NAMES[(row * 7 + 3) % 10] for row in range(3, n, 10)}  # a tenth of the rows: 20k of 200k
    dropped = list(range(5, n, 20))  # a twentieth: 10k of 200k
    saved = ds.relabel(relabels).drop(dropped).save(progress=False)
    assert len(saved) == n - len(dropped)
    print(saved.build_info, file=sys.stderr)


BIG_SIDE = 9000


def build_big_image(root: Path) -> str:
    """A dataset of one 9000 x 9000 JPEG (a gradient with noise, about 20 MB), in ``root / "big"``."""
    import io

    import numpy as np
    from PIL import Image as PILImage

    import stable_explore as se

    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 200, BIG_SIDE, dtype=np.float32)
    pixels = np.empty((BIG_SIDE, BIG_SIDE, 3), dtype=np.uint8)
    for start in range(0, BIG_SIDE, 500):  # in strips: the benchmark itself stays small
        strip = ramp[None, :, None] + rng.normal(0, 25, size=(min(500, BIG_SIDE - start), BIG_SIDE, 1))
        pixels[start : start + 500] = np.clip(strip, 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="JPEG", quality=85)
    del pixels
    ds = se.build(
        [{"image": buffer.getvalue()}], se.Features(image=se.Image()), name="big", home=root / "big", progress=False
    )
    return ds.ref


def op_image_stats(ref: str, home: str, root: Path) -> None:
    from stable_explore.signals import image_stats

    ref = json.loads((root / "big.json").read_text())["ref"]
    stats = image_stats(_ours(ref, str(root / "big")))
    assert stats.column("width").to_pylist() == [BIG_SIDE]


def op_embeddings(ref: str, home: str, root: Path) -> None:
    from stable_explore.signals import embedding_outliers, neighbor_label_issues

    ds = _ours(ref, home)
    ds = ds.select(range(min(len(ds), int(os.environ.get("BENCH_EMBED_ROWS", "100000")))))
    assert len(embedding_outliers(ds)) == len(ds)
    neighbor_label_issues(ds)


def op_iterate(ref: str, home: str, root: Path) -> None:
    count = sum(1 for _ in _ours(ref, home).with_format("python"))
    assert count > 0


def op_iterable(ref: str, home: str, root: Path) -> None:
    count = sum(1 for _ in _ours(ref, home).with_format("python").to_iterable())
    assert count > 0


def op_shuffled(ref: str, home: str, root: Path) -> None:
    import numpy as np

    ds = _ours(ref, home).with_format("python")
    order = np.random.default_rng(0).permutation(len(ds)).tolist()
    count = 0
    for start in range(0, len(order), 64):  # as DataLoader(ds, shuffle=True, batch_size=64) reads
        count += len(ds.__getitems__(order[start : start + 64]))
    assert count == len(ds)


def op_pandas(ref: str, home: str, root: Path) -> None:
    ds = _ours(ref, home)
    frame = ds.select(range(min(len(ds), 10_000))).to_pandas()
    assert len(frame) > 0


def op_pyarrow(ref: str, home: str, root: Path) -> None:
    import pyarrow as pa

    count = 0
    for path in sorted(_ours(ref, home).cache_meta.shard_paths):
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                count += len(reader.get_batch(i).select(["image", "label", "score"]).to_pylist())
    assert count > 0


def op_hf(ref: str, home: str, root: Path) -> None:
    import datasets

    hf = datasets.load_from_disk(str(root / "hf"))
    count = sum(1 for _ in hf)
    assert count > 0


ISSUE34 = ("edit_save", "image_stats", "embeddings")
OPERATIONS: dict[str, tuple[str, Callable[[str, str, Path], None]]] = {
    "relabel": ("relabel x10 + save", op_relabel),
    "set": ("set x10 + save", op_set),
    "drop": ("drop x10 + save", op_drop),
    "compaction": ("compaction save", op_compaction),
    "rewrite": ("drop 60%, set + save", op_rewrite),
    "edit_save": ("relabel 10% + drop 5%", op_edit_save),
    "image_stats": ("image_stats 9000x9000", op_image_stats),
    "embeddings": ("outliers + votes", op_embeddings),
    "iterate": ("for row in ds", op_iterate),
    "iterable": ("to_iterable()", op_iterable),
    "shuffled": ("shuffled batches of 64", op_shuffled),
    "pandas": ("to_pandas 10k", op_pandas),
    "pyarrow": ("pyarrow.ipc scan", op_pyarrow),
    "hf": ("HF datasets iter", op_hf),
}


def measure(name: str, ref: str, home: str, root: Path) -> dict[str, Any]:
    """Run one operation in this (fresh) process and return its peaks over the import baseline."""
    import numpy  # noqa: F401 - part of the baseline
    import PIL.Image  # noqa: F401
    import pyarrow  # noqa: F401

    import stable_explore  # noqa: F401

    if name == "pandas":
        import pandas  # noqa: F401
    if name == "hf":
        import datasets  # noqa: F401
    if name == "iterable":
        import torch  # noqa: F401 - to_iterable gives a torch IterableDataset: torch's import is not the scan's
    if name == "embeddings":
        import importlib.util

        if importlib.util.find_spec("sklearn") is not None:
            import sklearn.neighbors  # noqa: F401 - the neighbour search's import is not its memory
    peak = Peak()
    started = time.perf_counter()
    OPERATIONS[name][1](ref, home, root)
    result = peak.stop()
    result["seconds"] = time.perf_counter() - started
    return result


# --- builds: growth with the number of rows ---------------------------------------------------------------


def _build_source(kind: str, n: int) -> tuple[Any, Any]:
    """(source, features) of a build: image or tiny rows, as dicts or as column batches, all made lazily."""
    import pyarrow as pa

    from stable_explore import ClassLabel, Features, Image, Value

    if kind.startswith("images"):
        features = Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"))
        jpegs = make_jpegs()
        if kind == "images rows":
            return ((key, row) for key, row in rows(n)), features

        def image_batches() -> Iterator[Any]:
            for start in range(0, n, 1000):
                stop = min(n, start + 1000)
                yield pa.record_batch(
                    {
                        "__key__": pa.array([f"row-{i:07d}" for i in range(start, stop)]),
                        "image": pa.array([distinct_jpeg(jpegs, i) for i in range(start, stop)], pa.binary()),
                        "label": pa.array([(i * 7) % 10 for i in range(start, stop)]),
                        "score": pa.array([i * 0.001 for i in range(start, stop)], pa.float32()),
                    }
                )

        return image_batches(), features
    features = Features(label=ClassLabel(names=NAMES), score=Value("float32"))
    if kind == "tiny rows":
        return ({"label": i % 10, "score": i * 0.5} for i in range(n)), features

    def tiny_batches() -> Iterator[Any]:
        import numpy as np

        for start in range(0, n, 10_000):
            numbers = np.arange(start, min(n, start + 10_000))
            yield pa.record_batch({"label": pa.array(numbers % 10), "score": pa.array(numbers * 0.5, pa.float32())})

    return tiny_batches(), features


BUILDS = {
    "images rows": (20_000, 100_000),
    "images columns": (20_000, 100_000),
    "tiny rows": (1_000_000, 10_000_000),
    "tiny columns": (1_000_000, 10_000_000),
}


def measure_build(kind: str, n: int, home: Path) -> dict[str, Any]:
    """One build in this (fresh) process: its peaks over the baseline taken after the imports."""
    import numpy  # noqa: F401 - part of the baseline
    import PIL.Image  # noqa: F401
    import pyarrow  # noqa: F401

    import stable_explore as se

    source, features = _build_source(kind, n)
    peak = Peak()
    started = time.perf_counter()
    se.build(source, features, name="growth", home=home, progress=False)
    result = peak.stop()
    result["seconds"] = time.perf_counter() - started
    return result


def run_builds(root: Path) -> None:
    here = str(Path(__file__).resolve())
    print(f"{'build':16s} {'rows':>12s} {'rss MB':>8s} {'anon MB':>8s} {'s':>7s}   growth (rss, anon)")
    for kind, sizes in BUILDS.items():
        peaks = []
        for n in sizes:
            home = root / f"growth-{kind.replace(' ', '-')}-{n}"
            done = subprocess.run(
                [sys.executable, here, "--build-one", kind, "--rows", str(n), "--home", str(home)],
                capture_output=True,
                text=True,
                check=False,
            )
            shutil.rmtree(home, ignore_errors=True)
            if done.returncode != 0:
                print(f"{kind:16s} {n:>12,d} failed: {done.stderr.strip().splitlines()[-1:]}")
                break
            result = json.loads(done.stdout.strip().splitlines()[-1])
            peaks.append(result)
            print(f"{kind:16s} {n:>12,d} {result['rss_mb']:8.1f} {result['anon_mb']:8.1f} {result['seconds']:7.1f}")
        if len(peaks) == 2:
            rss = peaks[1]["rss_mb"] - peaks[0]["rss_mb"]
            anon = peaks[1]["anon_mb"] - peaks[0]["anon_mb"]
            verdict = "ok" if max(rss, anon) < 16 else "OVER 16 MB"
            print(f"{'':16s} {'':>12s} {'':>8s} {'':>8s} {'':>7s}   {rss:+.1f} MB, {anon:+.1f} MB: {verdict}")


def run_fresh(name: str, ref: str, home: Path, root: Path) -> dict[str, Any]:
    here = str(Path(__file__).resolve())
    done = subprocess.run(
        [sys.executable, here, "--one", name, "--ref", ref, "--home", str(home), "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--only", nargs="*", choices=sorted(OPERATIONS), help="run only these operations")
    parser.add_argument("--keep", type=Path, help="build into (or reuse) this folder instead of a temporary one")
    parser.add_argument("--builds", action="store_true", help="the growth of builds from N/5 to N rows (see above)")
    parser.add_argument("--issue34", action="store_true", help="only issue 34's three workloads (see above)")
    parser.add_argument("--embed-rows", type=int, default=100_000, help="rows of the outliers + votes workload")
    parser.add_argument("--repeat", type=int, default=1, help="fresh runs per operation; the median is shown")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--build-one", help=argparse.SUPPRESS)
    parser.add_argument("--ref", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.ref, args.home, args.root)))
        return
    if args.build_one:
        print(json.dumps(measure_build(args.build_one, args.rows, Path(args.home))))
        return
    if args.builds:
        with tempfile.TemporaryDirectory(prefix="bench-memory-builds-") as temp:
            run_builds(Path(temp))
        return
    os.environ["BENCH_EMBED_ROWS"] = str(args.embed_rows)  # read by the fresh processes
    names = list(ISSUE34) if args.issue34 else args.only or list(OPERATIONS)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as temp:
        root = args.keep or Path(temp)
        root.mkdir(parents=True, exist_ok=True)
        marker = root / f"built-{args.rows}.json"
        if marker.exists():
            ref = json.loads(marker.read_text())["ref"]
        else:
            started = time.perf_counter()
            ref = build(root, args.rows)
            print(f"built {args.rows:,} rows as {ref} in {time.perf_counter() - started:.0f} s")
            marker.write_text(json.dumps({"ref": ref}))
        if "image_stats" in names and not (root / "big.json").exists():
            (root / "big.json").write_text(json.dumps({"ref": build_big_image(root)}))
        if "hf" in names and not (root / "hf").exists():
            try:
                build_hf(root, args.rows)
            except ImportError:
                names.remove("hf")
                print("HF datasets is not installed: pip install datasets (the bench extra)")
        print(f"{'operation':22s} {'peak MB':>8s} {'rss MB':>8s} {'anon MB':>8s} {'baseline MB':>12s} {'s':>6s}")
        for name in names:
            results = [run_fresh(name, ref, root / "home", root) for _ in range(max(1, args.repeat))]
            failed = [r for r in results if "error" in r]
            if failed:
                print(f"{OPERATIONS[name][0]:22s} failed: {failed[0]['error']}")
                continue
            median = {field: statistics.median(r[field] for r in results) for field in results[0]}
            print(
                f"{OPERATIONS[name][0]:22s} {median['peak_mb']:8.0f} {median['rss_mb']:8.0f} {median['anon_mb']:8.0f} "
                f"{median['base_rss_mb']:12.0f} {median['seconds']:6.1f}"
            )


if __name__ == "__main__":
    main()
