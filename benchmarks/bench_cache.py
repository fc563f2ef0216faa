"""Benchmark: writing and reading an image cache with stable-explore, raw pyarrow and Hugging Face ``datasets``.

One workload for all three contenders: N rows of a 64x64 JPEG, a class label (10 names, given as ints),
a float32 and a string. 512 distinct JPEGs are encoded with PIL before any timing and cycled through;
the label, float and string make every row distinct.

Writes (each in a fresh subprocess, after a 200-row warm-up write so that lazy imports are not counted,
and after ``os.sync()`` so that no run pays for an earlier run's dirty pages; 7 interleaved runs per
writer, the order rotating each round, 2 with ``--quick``; ratios use each writer's fastest run, the one
least disturbed by other load, and are also given paired within each round):

* raw pyarrow: the generator's dicts gathered into Python lists per 1000 rows, one ``pa.array`` per
  column, written with ``pyarrow.ipc.new_file``. This is the floor: the Python work any generator forces,
  and nothing else (no keys, row hashes, checks, fsync or atomic publish).
* ours: ``write_sharded_arrow_cache`` with keys ``f"row-{i}"`` (``__key__`` and ``__row_hash__`` columns
  are added by the writer), default shard size, ``batch_size=1000``.
* references, to show where the time goes: "plain" is raw plus a key column and our row hashes and
  nothing else (no input checks, shard digests, fsync or atomic publish); ours with ``os.fsync``
  stubbed out; and ours with every batch encoded, checked and hashed but then dropped (no files), the
  floor under any way of writing the shards.
* HF: ``datasets.Dataset.from_generator`` with ``datasets.Image()`` and ``ClassLabel`` features, offline
  (HF_* variables point at temp dirs), progress bars off; images passed as ``{"bytes": ..., "path": None}``.

Peak memory growth = peak RSS during the write minus the RSS just before it. On Linux the peak is the
kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs): exact and free of overhead.
Separate memory runs at N/10 and N rows also sample psutil every 5 ms (the fallback elsewhere, with
``ru_maxrss``), which gives the anonymous part, i.e. without pages of memory-mapped files.

Reads, on the caches just written (in this process, OS page cache warm): 256 random rows (fixed seed)
materialised to Python, sequential iteration over all rows in record batches, and a 10k-row slice
converted to pandas.

Targets (informational, the script always exits 0): our write >= 0.7x raw pyarrow rows/s; our peak
memory growth from N/10 to N rows (20k -> 200k by default) < 32 MB; the random 256-row take no slower
than HF's.

Run::

    python benchmarks/bench_cache.py            # 200k rows, a few minutes on 2 cores
    python benchmarks/bench_cache.py --quick    # 20k rows, well under a minute
    python benchmarks/bench_cache.py --rows 50000
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _report import mb as _mb
from _report import ms as _ms
from _report import rule as _rule
from _report import verdict as _verdict

LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
NUM_JPEGS = 512
IMAGE_SIDE = 64
BATCH_SIZE = 1000
WARMUP_ROWS = 200
SEED = 1234
TAKE_ROWS = 256
TAKE_REPEATS = 20
SEQUENTIAL_REPEATS = 3
SLICE_ROWS = 10_000
SLICE_REPEATS = 5
SAMPLE_INTERVAL_S = 0.005

WRITE_TARGET = 0.7
MEMORY_TARGET_MB = 32.0

DEFAULT_ROWS = 200_000
QUICK_ROWS = 20_000

WRITERS = ("raw", "ours", "hf", "plain", "ours-nofsync", "ours-nowrite")
READERS = ("raw", "ours", "hf")
MEMORY_WRITERS = ("raw", "ours", "hf")
WRITE_REPEATS = 7
QUICK_WRITE_REPEATS = 2
NAMES = {
    "raw": "raw pyarrow IPC",
    "ours": "stable-explore",
    "hf": "HF datasets",
    "plain": "plain: raw + keys + row hashes",
    "ours-nofsync": "stable-explore, fsync off (ref)",
    "ours-nowrite": "stable-explore, no files (ref)",
}
MB = 1024 * 1024


# --- workload --------------------------------------------------------------------


def make_jpegs(count: int = NUM_JPEGS, side: int = IMAGE_SIDE, seed: int = SEED) -> list[bytes]:
    """Distinct, photo-like small JPEGs: a random colour gradient plus noise."""
    from PIL import Image as PILImage

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side]
    out = []
    for _ in range(count):
        base = rng.integers(0, 256, size=3)
        slope = rng.uniform(-3.0, 3.0, size=(2, 3))
        pixels = base + xx[..., None] * slope[0] + yy[..., None] * slope[1] + rng.normal(0, 12, size=(side, side, 3))
        buffer = io.BytesIO()
        PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def plain_rows(n: int, jpegs: list[bytes]) -> Iterator[dict[str, Any]]:
    """What a user generator yields for raw pyarrow: plain dicts."""
    m = len(jpegs)
    for i in range(n):
        yield {"image": jpegs[i % m], "label": (i * 7) % 10, "score": i * 0.001, "caption": f"caption {i}"}


def keyed_rows(n: int, jpegs: list[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The same rows as ``(key, dict)`` pairs, for stable-explore."""
    m = len(jpegs)
    for i in range(n):
        yield f"row-{i}", {"image": jpegs[i % m], "label": (i * 7) % 10, "score": i * 0.001, "caption": f"caption {i}"}


def hf_rows(n: int, jpegs: list[bytes]) -> Iterator[dict[str, Any]]:
    """The same rows with the image as HF's ``{"bytes", "path"}`` dict."""
    m = len(jpegs)
    for i in range(n):
        yield {
            "image": {"bytes": jpegs[i % m], "path": None},
            "label": (i * 7) % 10,
            "score": i * 0.001,
            "caption": f"caption {i}",
        }


# --- writers (each returns the data files it wrote) --------------------------------


def write_raw(n: int, jpegs: list[bytes], out_dir: Path) -> list[Path]:
    """The floor: gather columns in Python lists, one pa.array per column per batch, IPC file writer."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    schema = pa.schema(
        [
            ("image", pa.large_binary()),
            ("label", pa.int64()),
            ("score", pa.float32()),
            ("caption", pa.string()),
        ]
    )
    names = schema.names
    types = [f.type for f in schema]
    columns: list[list[Any]] = [[] for _ in names]
    appenders = list(zip((c.append for c in columns), names, strict=True))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "raw.arrow"
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:

        def flush() -> None:
            arrays = [pa.array(values, type=t) for values, t in zip(columns, types, strict=True)]
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            for values in columns:
                values.clear()

        pending = 0
        for row in plain_rows(n, jpegs):
            for append, name in appenders:
                append(row[name])
            pending += 1
            if pending == BATCH_SIZE:
                flush()
                pending = 0
        if pending:
            flush()
    return [path]


def write_plain(n: int, jpegs: list[bytes], out_dir: Path) -> list[Path]:
    """The issue's "plain Python writer with keys and row hashes": raw plus a key column and our row hashes.

    No input checks, no shard digests, no fsync, no atomic publish: the least any writer with keys
    and row hashes does, with the same row-hash function as ours.
    """
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from stable_explore.storage.format.hashing import row_hashes

    schema = pa.schema(
        [
            ("image", pa.large_binary()),
            ("label", pa.int64()),
            ("score", pa.float32()),
            ("caption", pa.string()),
            ("__key__", pa.string()),
            ("__row_hash__", pa.uint64()),
        ]
    )
    names = schema.names[:4]
    types = [f.type for f in schema][:4]
    columns: list[list[Any]] = [[] for _ in names]
    keys: list[str] = []
    appenders = list(zip((c.append for c in columns), names, strict=True))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "plain.arrow"
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, schema) as writer:

        def flush() -> None:
            arrays = [pa.array(values, type=t) for values, t in zip(columns, types, strict=True)]
            hashes = row_hashes(arrays, [columns[0], None, None, columns[3]])
            arrays += [pa.array(keys, type=pa.string()), pa.array(hashes, type=pa.uint64())]
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            for values in columns:
                values.clear()
            keys.clear()

        for key, row in keyed_rows(n, jpegs):
            keys.append(key)
            for append, name in appenders:
                append(row[name])
            if len(keys) == BATCH_SIZE:
                flush()
        if keys:
            flush()
    return [path]


def our_features() -> Any:
    from stable_explore import ClassLabel, Features, Image, Value

    return Features(image=Image(), label=ClassLabel(names=LABEL_NAMES), score=Value("float32"), caption=Value("string"))


def write_ours(n: int, jpegs: list[bytes], out_dir: Path) -> list[Path]:
    from stable_explore.cache import write_sharded_arrow_cache

    meta = write_sharded_arrow_cache(keyed_rows(n, jpegs), our_features(), out_dir / "cache", batch_size=BATCH_SIZE)
    return meta.shard_paths


def hf_features() -> Any:
    import datasets

    return datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=LABEL_NAMES),
            "score": datasets.Value("float32"),
            "caption": datasets.Value("string"),
        }
    )


def write_hf(n: int, jpegs: list[bytes], out_dir: Path) -> list[Path]:
    import datasets

    def generate() -> Iterator[dict[str, Any]]:
        yield from hf_rows(n, jpegs)

    # An explicit fingerprint skips HF's hashing of the generator (small here) and any cache reuse.
    ds = datasets.Dataset.from_generator(
        generate,
        features=hf_features(),
        cache_dir=str(out_dir / "hf"),
        fingerprint=f"bench-{n}-{os.getpid()}-{time.time_ns()}",
    )
    files = [Path(f["filename"]) for f in ds.cache_files]
    del ds
    return files


def _no_fsync(fd: int) -> None:
    del fd


def _drop_batch(self: Any, batch: Any) -> None:
    del self, batch


def _prepare_writer(kind: str) -> Callable[[int, list[bytes], Path], list[Path]]:
    """Import what the writer needs (so imports are outside the measurement) and return it."""
    import pyarrow.ipc  # noqa: F401

    if kind == "raw":
        return write_raw
    if kind == "plain":
        import stable_explore._hashing

        return write_plain
    if kind in ("ours", "ours-nofsync", "ours-nowrite"):
        import stable_explore.cache

        if kind == "ours-nofsync":
            os.fsync = _no_fsync  # reference run only: what the writer costs without durability
        if kind == "ours-nowrite":
            # reference run only: batches are encoded, checked and hashed, then dropped (no files at all),
            # so this is our Python work alone, the floor for any way of writing the files
            stable_explore.cache.ShardWriter.write = _drop_batch  # type: ignore[method-assign]
        return write_ours
    if kind == "hf":
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
        return write_hf
    raise ValueError(f"unknown writer {kind!r}")


# --- memory ------------------------------------------------------------------------

_PROC_STATUS = Path("/proc/self/status")
_PROC_CLEAR_REFS = Path("/proc/self/clear_refs")


def _proc_status_bytes(name: str) -> int | None:
    """A ``kB`` field of /proc/self/status in bytes, or None off Linux."""
    try:
        text = _PROC_STATUS.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) * 1024
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (VmHWM; Linux >= 4.0). False where that is unavailable."""
    try:
        with _PROC_CLEAR_REFS.open("w") as f:
            f.write("5")
    except OSError:
        return False
    return _proc_status_bytes("VmHWM") is not None


def _ru_maxrss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class PeakMemory:
    """Peak RSS growth of a ``with`` block over the RSS at its start.

    On Linux the kernel's RSS high-water mark is reset on entry and read on exit: exact and free. With
    ``sample=True``, or where that reset is unavailable, a thread also samples psutil every 5 ms (plus
    ``ru_maxrss`` when it rose); the samples give the anonymous part too (RSS minus file-backed pages,
    e.g. without the pages of a memory-mapped output file).
    """

    def __init__(self, *, sample: bool = False, interval: float = SAMPLE_INTERVAL_S) -> None:
        import psutil

        self._process = psutil.Process()
        self._sampling = sample
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._kernel_peak = False
        self._ru_before = 0
        self.base_rss = self.peak_rss = 0
        self.base_anon = self.peak_anon = 0
        self.method = ""

    def _sample(self) -> None:
        info = self._process.memory_info()
        self.peak_rss = max(self.peak_rss, info.rss)
        self.peak_anon = max(self.peak_anon, info.rss - getattr(info, "shared", 0))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> PeakMemory:
        gc.collect()
        info = self._process.memory_info()
        self.base_rss = self.peak_rss = info.rss
        self.base_anon = self.peak_anon = info.rss - getattr(info, "shared", 0)
        self._kernel_peak = _reset_peak_rss()
        self._sampling = self._sampling or not self._kernel_peak
        self._ru_before = _ru_maxrss_bytes()
        self.method = "kernel VmHWM" if self._kernel_peak else "sampled"
        if self._sampling:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sampling:
            self._stop.set()
            self._thread.join()
        self._sample()
        hwm = _proc_status_bytes("VmHWM") if self._kernel_peak else None
        if hwm is not None:
            self.peak_rss = max(self.peak_rss, hwm)
        else:
            ru_after = _ru_maxrss_bytes()
            if ru_after > self._ru_before:  # the lifetime peak rose inside the block: it is the block's peak
                self.peak_rss = max(self.peak_rss, ru_after)

    @property
    def rss_growth(self) -> int:
        return self.peak_rss - self.base_rss

    @property
    def anon_growth(self) -> int | None:
        return self.peak_anon - self.base_anon if self._sampling else None


def write_worker(kind: str, rows: int, out_dir: Path, *, sample: bool) -> dict[str, Any]:
    """Body of the subprocess that measures one write."""
    writer = _prepare_writer(kind)
    jpegs = make_jpegs()
    warmup_dir = out_dir / "warmup"
    writer(WARMUP_ROWS, jpegs, warmup_dir)
    shutil.rmtree(warmup_dir, ignore_errors=True)
    with PeakMemory(sample=sample) as memory:
        started, cpu_started = time.perf_counter(), time.process_time()
        files = writer(rows, jpegs, out_dir / "run")
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "kind": kind,
        "rows": rows,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "rss_growth": memory.rss_growth,
        "anon_growth": memory.anon_growth,
        "memory_method": memory.method,
        "files": [str(f) for f in files],
        "bytes_on_disk": sum(f.stat().st_size for f in files),
        "jpeg_mean_bytes": sum(map(len, jpegs)) / len(jpegs),
    }


def spawn_write(kind: str, rows: int, out_dir: Path, *, sample: bool = False) -> dict[str, Any]:
    """Run one write in a fresh interpreter (after flushing earlier runs' dirty pages) and return its figures."""
    command = [sys.executable, str(Path(__file__).resolve()), "--_worker", kind, "--rows", str(rows)]
    command += ["--_out", str(out_dir)] + (["--_sample"] if sample else [])
    os.sync()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} write of {rows} rows failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass
class WriteRuns:
    """Repeated timing runs of one writer at N rows, plus its memory runs at N/10 and N."""

    kind: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    memory_small: dict[str, Any] = field(default_factory=dict)
    memory_large: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> float:
        """Fastest run: the least disturbed by other load and disk writeback, so the fairest to compare."""
        return min(r["seconds"] for r in self.runs)

    @property
    def median(self) -> float:
        return statistics.median(r["seconds"] for r in self.runs)

    @property
    def cpu(self) -> float:
        """CPU seconds (user + system) of the fastest run."""
        return min(self.runs, key=lambda r: r["seconds"])["cpu_seconds"]

    @property
    def rate(self) -> float:
        return self.runs[0]["rows"] / self.best

    @property
    def peak_growth(self) -> int:
        return max(r["rss_growth"] for r in self.runs)


# --- reads -------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    return statistics.median(timed(fn) for _ in range(repeats))


class ReadSubjects:
    """Opens each contender's cache the way its users would."""

    def __init__(self, raw_file: Path, ours_dir: Path, hf_files: list[Path]) -> None:
        self.raw_file = raw_file
        self.ours_dir = ours_dir
        self.hf_files = hf_files

    def open_raw(self) -> Any:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        return ipc.open_file(pa.memory_map(str(self.raw_file), "r")).read_all()

    def open_ours(self) -> Any:
        from stable_explore.backend import ArrowBackend
        from stable_explore.cache import read_sharded_cache_meta

        return ArrowBackend.from_meta(read_sharded_cache_meta(self.ours_dir))

    def open_hf(self) -> Any:
        import datasets

        parts = [datasets.Dataset.from_file(str(f)) for f in self.hf_files]
        ds = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
        return ds.cast_column("image", datasets.Image(decode=False)).with_format(None)


def bench_reads(subjects: ReadSubjects, n: int) -> dict[str, dict[str, float]]:
    import datasets  # imported up front so that no cold call pays for an import
    import pyarrow as pa
    import pyarrow.ipc as ipc

    import stable_explore.backend
    import stable_explore.cache

    del datasets, stable_explore

    indices = np.random.default_rng(SEED).choice(n, size=min(TAKE_ROWS, n), replace=False)
    index_list = [int(i) for i in indices]
    index_array = pa.array(indices)
    results: dict[str, dict[str, float]] = {"raw": {}, "ours": {}, "hf": {}}

    # (a) random take, cold (fresh open) then warm
    got: dict[str, Any] = {}

    def raw_cold() -> None:
        got["raw"] = subjects.open_raw().take(index_array).to_pydict()

    def ours_cold() -> None:
        got["ours"] = subjects.open_ours().take(indices).to_pydict()

    def hf_cold() -> None:
        got["hf"] = subjects.open_hf()[index_list]

    for kind, cold in (("raw", raw_cold), ("ours", ours_cold), ("hf", hf_cold)):
        results[kind]["take_cold"] = timed(cold)
    for column in ("label", "score", "caption"):
        if not got["raw"][column] == got["ours"][column] == got["hf"][column]:
            raise AssertionError(f"contenders disagree on column {column!r} of the random rows")
    if not got["raw"]["image"] == got["ours"]["image"] == [img["bytes"] for img in got["hf"]["image"]]:
        raise AssertionError("contenders disagree on the image bytes of the random rows")

    table = subjects.open_raw()
    backend = subjects.open_ours()
    hf = subjects.open_hf()
    hf_arrow = hf.with_format("arrow")
    results["raw"]["take"] = median_time(lambda: table.take(index_array).to_pydict(), TAKE_REPEATS)
    results["ours"]["take"] = median_time(lambda: backend.take(indices).to_pydict(), TAKE_REPEATS)
    results["hf"]["take"] = median_time(lambda: hf[index_list], TAKE_REPEATS)

    # (b) sequential batches: count rows (Arrow batches), then materialise each batch to Python
    def raw_batches() -> Iterator[Any]:
        reader = ipc.open_file(pa.memory_map(str(subjects.raw_file), "r"))
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)

    def count(batches: Iterator[Any]) -> int:
        return _checked(sum(b.num_rows for b in batches), n)

    def count_python(batches: Iterator[dict[str, list[Any]]]) -> int:
        return _checked(sum(len(b["caption"]) for b in batches), n)

    repeats = SEQUENTIAL_REPEATS
    results["raw"]["iter_arrow"] = median_time(lambda: count(raw_batches()), repeats)
    results["ours"]["iter_arrow"] = median_time(lambda: count(backend.iter_batches()), repeats)
    results["hf"]["iter_arrow"] = median_time(lambda: count(hf_arrow.iter(batch_size=BATCH_SIZE)), repeats)
    results["raw"]["iter_python"] = median_time(lambda: count_python(b.to_pydict() for b in raw_batches()), repeats)
    results["ours"]["iter_python"] = median_time(
        lambda: count_python(b.to_pydict() for b in backend.iter_batches()), repeats
    )
    results["hf"]["iter_python"] = median_time(lambda: count_python(hf.iter(batch_size=BATCH_SIZE)), repeats)

    # (c) a 10k-row slice to pandas
    rows = min(SLICE_ROWS, n)
    results["raw"]["pandas"] = median_time(lambda: table.slice(0, rows).to_pandas(), SLICE_REPEATS)
    results["ours"]["pandas"] = median_time(lambda: backend.slice(0, rows).to_pandas(), SLICE_REPEATS)
    results["hf"]["pandas"] = median_time(lambda: hf.select(range(rows)).to_pandas(), SLICE_REPEATS)
    return results


def _checked(total: int, expected: int) -> int:
    if total != expected:
        raise AssertionError(f"iterated {total} rows, expected {expected}")
    return total


# --- report ------------------------------------------------------------------------


def print_header(n: int, small: int, repeats: int, writes: dict[str, WriteRuns]) -> None:
    import datasets
    import pyarrow as pa

    import stable_explore

    first = writes["raw"].runs[0]
    print("stable-explore cache benchmark")
    print("==============================")
    print(
        f"workload: {n:,} rows = 64x64 JPEG ({NUM_JPEGS} distinct, mean {first['jpeg_mean_bytes'] / 1024:.1f} KB, "
        "cycled) + ClassLabel(10 names, as ints) + float32 + string; every row distinct"
    )
    print(
        f"writers: batches of {BATCH_SIZE} rows; each write in a fresh subprocess after a {WARMUP_ROWS}-row warm-up "
        f"write and os.sync(); {repeats} timing run(s) per writer, interleaved"
    )
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, pyarrow {pa.__version__}, datasets {datasets.__version__}, "
        f"stable-explore {stable_explore.__version__}"
    )


def print_writes(n: int, small: int, writes: dict[str, WriteRuns]) -> None:
    repeats = len(writes["raw"].runs)
    _rule(f"WRITE {n:,} rows: best and median of {repeats} runs; rows/s (from the best run) higher is better")
    header = f"{'contender':<33}{'best s':>8}{'median s':>10}{'CPU s':>8}{'rows/s':>11}{'on disk':>11}"
    print(f"{header}{'peak RSS growth':>17}")
    for kind in WRITERS:
        w = writes[kind]
        print(
            f"{NAMES[kind]:<33}{w.best:>8.2f}{w.median:>10.2f}{w.cpu:>8.2f}{w.rate:>11,.0f}"
            f"{_mb(w.runs[-1]['bytes_on_disk']):>11}{_mb(w.peak_growth):>17}"
        )
    vs_raw = writes["ours"].rate / writes["raw"].rate
    vs_raw_median = writes["raw"].median / writes["ours"].median
    paired = _paired_ratios(writes["raw"], writes["ours"])
    print()
    print(
        f"ours / raw pyarrow rows/s:  {vs_raw:.2f}x (medians: {vs_raw_median:.2f}x)   target >= {WRITE_TARGET:.2f}x   "
        f"{_verdict(vs_raw >= WRITE_TARGET)}"
    )
    print(
        f"  paired by round (raw and ours in the same round): median {statistics.median(paired):.2f}x, "
        f"range {min(paired):.2f}x to {max(paired):.2f}x"
    )
    print(f"ours / HF datasets rows/s:  {writes['ours'].rate / writes['hf'].rate:.2f}x")
    print()
    print("where the time goes (best runs; rows/s as a fraction of raw's, so 1.00x = as fast as raw):")
    for kind, what in (
        ("plain", "raw + a key column + our row hashes, nothing else"),
        ("ours-nowrite", "ours, batches encoded, checked and hashed, then dropped"),
        ("ours-nofsync", "ours with os.fsync stubbed"),
        ("ours", "ours as shipped"),
    ):
        print(f"  {writes[kind].rate / writes['raw'].rate:>5.2f}x  {what}")
    print("  (plain has no input checks, shard digests, fsync or atomic publish; 'no files' is a floor for ours:")
    print("   no way of writing the shards can make the whole write faster than that run)")
    print("CPU s = user + system CPU time of the writing process (raw and HF leave their data in the page cache;")
    print("        ours also waits for fsync); os.sync() runs between writes, outside the timing")
    method = writes["ours"].runs[0]["memory_method"]
    print(f"peak RSS growth: max over the timing runs, {method}, above the RSS right before the write")

    _rule("MEMORY: peak growth during the write vs row count (separate runs, RSS also sampled every 5 ms)")
    print(f"{'contender':<33}{f'{small:,} rows':>14}{f'{n:,} rows':>14}{'difference':>14}{'anon at N':>14}")
    for kind in MEMORY_WRITERS:
        w = writes[kind]
        a, b = w.memory_small["rss_growth"], w.memory_large["rss_growth"]
        anon = w.memory_large["anon_growth"]
        print(f"{NAMES[kind]:<33}{_mb(a):>14}{_mb(b):>14}{_mb(b - a):>14}{_mb(anon):>14}")
    print("anon = growth of RSS minus file-backed pages (HF maps and reads back its output file inside the write)")
    growth = _memory_difference(writes)
    print()
    print(
        f"ours, growth from {small:,} to {n:,} rows: {growth / MB:+.1f} MB   target < {MEMORY_TARGET_MB:.0f} MB   "
        f"{_verdict(growth < MEMORY_TARGET_MB * MB)}"
    )


def _paired_ratios(raw: WriteRuns, ours: WriteRuns) -> list[float]:
    """raw time / our time within each round: the two ran seconds apart, so a slow spell of the machine
    (this one has them, lasting minutes) slows both and mostly cancels out."""
    return [r["seconds"] / o["seconds"] for r, o in zip(raw.runs, ours.runs, strict=True)]


def _memory_difference(writes: dict[str, WriteRuns]) -> int:
    ours = writes["ours"]
    return ours.memory_large["rss_growth"] - ours.memory_small["rss_growth"]


def print_reads(n: int, reads: dict[str, dict[str, float]]) -> None:
    def ratios(metric: str) -> str:
        ours = reads["ours"][metric]
        return f"ours: {ours / reads['raw'][metric]:.2f}x raw time, {ours / reads['hf'][metric]:.2f}x HF time"

    _rule(f"READ (a) {TAKE_ROWS} random rows (seed {SEED}) to Python; time: lower is better")
    print("raw: table.take(idx).to_pydict() on the memory-mapped IPC file (read_all)")
    print("ours: backend.take(idx).to_pydict(), all 6 columns incl. __key__ and __row_hash__")
    print("HF: ds[idx] after cast_column('image', Image(decode=False)), format None (4 columns)")
    print(f"{'contender':<33}{f'median of {TAKE_REPEATS}':>14}{'cold first call':>18}")
    for kind in ("raw", "ours", "hf"):
        print(f"{NAMES[kind]:<33}{_ms(reads[kind]['take']):>14}{_ms(reads[kind]['take_cold']):>18}")
    ok = reads["ours"]["take"] <= reads["hf"]["take"]
    print(f"median: {ratios('take')}   target: no slower than HF (<= 1.00x)   {_verdict(ok)}")
    print(f"cold:   {ratios('take_cold')}")
    print("cold = open the cache as a user would (ours: metadata + map and validate shards) and take once")

    _rule(f"READ (b) all {n:,} rows in batches of {BATCH_SIZE}, median of {SEQUENTIAL_REPEATS}; higher is better")
    print(f"{'contender':<33}{'Arrow rows/s':>16}{'Python rows/s':>16}")
    for kind in ("raw", "ours", "hf"):
        arrow, python = reads[kind]["iter_arrow"], reads[kind]["iter_python"]
        print(f"{NAMES[kind]:<33}{n / arrow:>16,.0f}{n / python:>16,.0f}")
    print("Arrow: raw IPC reader.get_batch(i), ours iter_batches(), HF with_format('arrow').iter(); counting rows")
    print("       only, so this is per-batch overhead (ours yields batches it already holds)")
    print("Python: batch.to_pydict() for raw and ours; HF ds.iter(batch_size) (format None, image decode off)")
    print(f"Arrow:  {ratios('iter_arrow')}")
    print(f"Python: {ratios('iter_python')}")

    rows = min(SLICE_ROWS, n)
    _rule(f"READ (c) first {rows:,} rows to pandas, median of {SLICE_REPEATS}; time: lower is better")
    print("raw: table.slice().to_pandas(); ours: backend.slice().to_pandas(); HF: ds.select(range).to_pandas()")
    for kind in ("raw", "ours", "hf"):
        print(f"{NAMES[kind]:<33}{_ms(reads[kind]['pandas']):>14}")
    print(ratios("pandas"))


def print_summary(n: int, small: int, writes: dict[str, WriteRuns], reads: dict[str, dict[str, float]]) -> None:
    vs_raw = writes["ours"].rate / writes["raw"].rate
    growth = _memory_difference(writes)
    take = reads["ours"]["take"] / reads["hf"]["take"]
    rows = [
        (f"write rows/s >= {WRITE_TARGET:.1f}x raw pyarrow", f"{vs_raw:.2f}x", vs_raw >= WRITE_TARGET),
        (
            f"peak memory growth {small:,} -> {n:,} rows < {MEMORY_TARGET_MB:.0f} MB",
            f"{growth / MB:+.1f} MB",
            growth < MEMORY_TARGET_MB * MB,
        ),
        (f"random {TAKE_ROWS}-row take time <= HF's", f"{take:.2f}x", take <= 1.0),
    ]
    _rule("TARGETS (informational; the exit status is 0 either way)")
    for label, value, ok in rows:
        print(f"{label:<52}{value:>12}   {_verdict(ok)}")


# --- main --------------------------------------------------------------------------


def _set_offline_env(root: Path) -> None:
    """Keep HF off the network and out of the user's caches (inherited by the write subprocesses)."""
    for name in ("HF_HOME", "HF_DATASETS_CACHE"):
        path = root / name.lower()
        path.mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(path)
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"


def run_writes(root: Path, n: int, small: int, repeats: int) -> dict[str, WriteRuns]:
    """Timing runs (interleaved, so drift hits every writer alike), then memory runs at N/10 and N.

    The order rotates each round, so no writer always runs first (right after the previous round's
    writes) or last.
    """
    writes = {kind: WriteRuns(kind) for kind in WRITERS}
    for rep in range(repeats):
        shift = rep % len(WRITERS)
        for kind in WRITERS[shift:] + WRITERS[:shift]:
            out = root / f"write-{kind}-{rep}"
            writes[kind].runs.append(spawn_write(kind, n, out))
            if rep < repeats - 1 or kind not in READERS:  # keep the last cache of each reader for the reads
                shutil.rmtree(out, ignore_errors=True)
    for kind in MEMORY_WRITERS:
        for rows, attr in ((small, "memory_small"), (n, "memory_large")):
            out = root / f"memory-{kind}-{rows}"
            setattr(writes[kind], attr, spawn_write(kind, rows, out, sample=True))
            shutil.rmtree(out, ignore_errors=True)
    return writes


def run(n: int, small: int, repeats: int) -> None:
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="bench_cache-"))
    try:
        _set_offline_env(root)
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()

        writes = run_writes(root, n, small, repeats)
        subjects = ReadSubjects(
            raw_file=Path(writes["raw"].runs[-1]["files"][0]),
            ours_dir=Path(writes["ours"].runs[-1]["files"][0]).parent,
            hf_files=[Path(f) for f in writes["hf"].runs[-1]["files"]],
        )
        reads = bench_reads(subjects, n)

        print_header(n, small, repeats, writes)
        print_writes(n, small, writes)
        print_reads(n, reads)
        print_summary(n, small, writes, reads)
        print()
        print(f"total benchmark time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help=f"rows to write and read (default {DEFAULT_ROWS:,})")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run: {QUICK_ROWS:,} rows unless --rows, {QUICK_WRITE_REPEATS} timing runs per writer",
    )
    parser.add_argument("--_worker", choices=WRITERS, help=argparse.SUPPRESS)
    parser.add_argument("--_out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--_sample", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    if n < 1:
        parser.error("--rows must be positive")
    if args._worker:
        print(json.dumps(write_worker(args._worker, n, args._out, sample=args._sample)))
        return 0
    run(n, small=max(1, n // 10), repeats=QUICK_WRITE_REPEATS if args.quick else WRITE_REPEATS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
