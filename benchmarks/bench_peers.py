"""Benchmark: builds and random reads against our peers, on the same data, each measurement in a fresh process.

The data (``--case images``, the default): N rows (100k) of a distinct JPEG of about 1.9 KB (512 photo-like
64x64 JPEGs made by Pillow from seeded noise, each row's made distinct by a comment segment naming its row;
nothing is downloaded), a 10-class label and a float32. ``--case small``: a string key, a 10-class label, a
float32 and 256 random bytes (the rows of ``bench_versions.py --table``).

The systems:

- ``raw IPC``: pyarrow's IPC file writer, given the column batches (1,000 rows each); no checks, no fsync;
  read memory-mapped, a row a one-row slice of its batch (no take: its first call imports pandas);
- ``Lance``: ``lance.write_dataset`` of the same column batches (``pylance``);
- ``Deep Lake``: ``deeplake.create`` (local folder), a batch at a time with ``ds.append``, then ``commit``
  (images as ``types.Bytes``: stored as given, as the others store them);
- ``ours rows``: ``se.build`` of a generator of example dicts, each a dict display as users write them
  (``(key, dict)`` pairs in the small case);
- ``ours columns``: ``se.build`` of the same column batches (``pyarrow.RecordBatch``; a ``__key__`` column in
  the small case). Both of ours keep every check: row hashes, batch digests, duplicate keys, image headers,
  and fsync every file they publish.

Each system builds in a fresh process (its imports and the data made before the clock starts; the data is in
memory before the baseline, so memory is the build's own), at N/5 and at N rows; a third fresh process opens
the N-row build and reads 256 random rows (fixed seed) as Python values (images as bytes), then 256 other
random rows five times on the opened dataset. Three rounds, the order of the systems rotated each round;
medians and ranges. Printed: build seconds, build CPU seconds (the process's, every thread's: what the load of
a shared machine distorts least), first 256 random rows from a fresh open (ms), warm 256 random
rows (ms), and the peak RSS growth from the N/5-row build to the N-row build (MB). Ratios: ours rows against
Lance (the goal: <= 1.0), ours columns against raw IPC (<= 1.2) and against Lance (>= 1.5x faster).
Informational: the machine is shared, so figures are noisy; exits 0.

Run::

    python benchmarks/bench_peers.py                    # 100k image rows, every system, 3 rounds
    python benchmarks/bench_peers.py --case small       # the small rows
    python benchmarks/bench_peers.py --rows 20000 --rounds 1 --only "ours rows" Lance
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

SYSTEMS = ["raw IPC", "Lance", "Deep Lake", "ours rows", "ours columns"]
BATCH = 1000
TAKE = 256
SEED = 7
NAMES = [f"class-{i}" for i in range(10)]
MB = 1024 * 1024


# --- the data ---------------------------------------------------------------------------------------------


class Data:
    """One case's rows as Python columns (for the row generator) and as Arrow column batches."""

    def __init__(self, case: str, n: int) -> None:
        import numpy as np
        import pyarrow as pa

        self.case, self.n = case, n
        rng = np.random.default_rng(SEED)
        if case == "images":
            jpegs = make_jpegs()
            self.columns: dict[str, list[Any]] = {
                "image": [distinct_jpeg(jpegs, i) for i in range(n)],
                "label": [(i * 7) % 10 for i in range(n)],
                "score": [float(x) for x in rng.random(n, dtype=np.float32)],
            }
            self.keys: list[str] | None = None
            types = {"image": pa.binary(), "label": pa.int64(), "score": pa.float32()}
        else:
            payload = rng.integers(0, 256, (n, 256), dtype=np.uint8)
            self.columns = {
                "label": [i % 10 for i in range(n)],
                "score": [float(x) for x in rng.random(n, dtype=np.float32)],
                "payload": [p.tobytes() for p in payload],
            }
            self.keys = [f"row-{i:08d}" for i in range(n)]
            types = {"label": pa.int64(), "score": pa.float32(), "payload": pa.binary()}
        self.types = types
        self.batches = [self._batch(start, min(n, start + BATCH)) for start in range(0, n, BATCH)]

    def _batch(self, start: int, stop: int) -> Any:
        import pyarrow as pa

        arrays = {name: pa.array(values[start:stop], self.types[name]) for name, values in self.columns.items()}
        if self.keys is not None:
            arrays = {"key": pa.array(self.keys[start:stop], pa.string()), **arrays}
        return pa.record_batch(arrays)

    def rows(self) -> Iterator[Any]:
        """What a user's generator yields: example dicts (or ``(key, dict)`` pairs), each written as a dict display.

        As a user writes one (``yield {"image": ..., "label": ..., "score": ...}``): building each dict with
        ``dict(zip(names, values))`` cost the source about 1.3 us a row, three times the display's 0.4 us,
        and that is the generator's cost, not the build's.
        """
        c = self.columns
        if self.keys is None:
            for image, label, score in zip(c["image"], c["label"], c["score"], strict=True):
                yield {"image": image, "label": label, "score": score}
        else:
            for key, label, score, payload in zip(self.keys, c["label"], c["score"], c["payload"], strict=True):
                yield key, {"label": label, "score": score, "payload": payload}

    def features(self) -> Any:
        from stable_explore import ClassLabel, Features, Image, Value

        if self.case == "images":
            return Features(image=Image(), label=ClassLabel(names=NAMES), score=Value("float32"))
        return Features(label=ClassLabel(names=NAMES), score=Value("float32"), payload=Value("binary"))

    def our_batches(self) -> Iterator[Any]:
        """The column batches as ours takes them: the key column named ``__key__``."""
        for batch in self.batches:
            yield batch.rename_columns(["__key__", *batch.schema.names[1:]]) if self.keys is not None else batch


# --- building ---------------------------------------------------------------------------------------------


class PeakRSS:
    """Peak resident memory over the baseline while the block runs (kernel high-water mark, sampled too)."""

    def __enter__(self) -> PeakRSS:
        self.base = status_kb("VmRSS")
        self.peak = self.base
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            self.hwm = True
        except OSError:
            self.hwm = False
        self._stop = threading.Event()
        # the kernel's high-water mark is exact: sampling is only for kernels without clear_refs. A sampler
        # thread would wake every 2 ms and take the GIL from a build that holds it (not from Lance's threads)
        self._thread = None if self.hwm else threading.Thread(target=self._sample, daemon=True)
        if self._thread is not None:
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, status_kb("VmRSS"))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, status_kb("VmHWM") if self.hwm else status_kb("VmRSS"))

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 1024


def build_raw(data: Data, where: Path) -> None:
    import pyarrow.ipc as ipc

    with ipc.new_file(str(where / "data.arrow"), data.batches[0].schema) as writer:
        for batch in data.batches:
            writer.write_batch(batch)


def build_lance(data: Data, where: Path) -> None:
    import lance
    import pyarrow as pa

    reader = pa.RecordBatchReader.from_batches(data.batches[0].schema, iter(data.batches))
    lance.write_dataset(reader, str(where / "data.lance"))


def build_deeplake(data: Data, where: Path) -> None:
    import deeplake

    types = deeplake.types
    kinds = {"image": types.Bytes(), "label": types.Int64(), "score": types.Float32(), "payload": types.Bytes()}
    schema = {name: kinds[name] for name in data.batches[0].schema.names if name != "key"}
    if data.keys is not None:
        schema = {"key": types.Text(), **schema}
    ds = deeplake.create(f"file://{where / 'data'}", schema=schema)
    for batch in data.batches:
        ds.append(batch.to_pydict())
    ds.commit("build")


def build_ours_rows(data: Data, where: Path) -> None:
    import stable_explore as se

    se.build(data.rows(), data.features(), name="peers", home=where / "home", progress=False)


def build_ours_columns(data: Data, where: Path) -> None:
    import stable_explore as se

    se.build(data.our_batches(), data.features(), name="peers", home=where / "home", progress=False)


BUILDERS: dict[str, Callable[[Data, Path], None]] = {
    "raw IPC": build_raw,
    "Lance": build_lance,
    "Deep Lake": build_deeplake,
    "ours rows": build_ours_rows,
    "ours columns": build_ours_columns,
}


def _import_for(system: str) -> None:
    """The system's imports, before the clock starts (Lance's and Deep Lake's take seconds)."""
    import pyarrow.ipc  # noqa: F401

    if system == "Lance":
        import lance  # noqa: F401
    elif system == "Deep Lake":
        import deeplake  # noqa: F401
    elif system.startswith("ours"):
        import stable_explore
        import stable_explore.api.building  # noqa: F401 - the package imports se.build only when first used


def child_build(system: str, case: str, n: int, where: Path) -> dict[str, float]:
    _import_for(system)
    data = Data(case, n)
    if system.startswith("ours"):
        data.features()  # the schema's import and checks, as Lance's schema is made before its clock
    with PeakRSS() as memory:
        started, cpu = time.perf_counter(), time.process_time()
        BUILDERS[system](data, where)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"seconds": seconds, "cpu": cpu, "rss_mb": memory.growth_mb}


# --- reading ----------------------------------------------------------------------------------------------


def _opener(system: str, where: Path) -> Callable[[], Callable[[list[int]], int]]:
    """A function that opens the build and returns a function taking rows (as Python) by position."""
    import pyarrow as pa

    if system == "raw IPC":

        def open_raw() -> Callable[[list[int]], int]:
            import numpy as np
            import pyarrow.ipc as ipc

            # The file memory-mapped and its batches located (zero-copy); each row a one-row slice of its batch,
            # as Python. Two faults of this harness cost the first read 431 ms: Table.take of the whole table
            # concatenated every chunk of the image column (all 175 MB, for 256 rows), and the first take of
            # any kind (Table, RecordBatch, pyarrow.compute) imports pandas, 0.5-0.9 s here; slicing needs neither.
            reader = ipc.open_file(pa.memory_map(str(where / "data.arrow")))
            batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
            starts = np.cumsum([0] + [batch.num_rows for batch in batches])

            def take(rows: list[int]) -> int:
                which = (np.searchsorted(starts, rows, side="right") - 1).tolist()
                firsts = starts.tolist()
                out = [batches[b].slice(row - firsts[b], 1).to_pylist()[0] for b, row in zip(which, rows, strict=True)]
                return len(out)

            return take

        return open_raw
    if system == "Lance":

        def open_lance() -> Callable[[list[int]], int]:
            import lance

            ds = lance.dataset(str(where / "data.lance"))
            return lambda rows: len(ds.take(rows).to_pylist())

        return open_lance
    if system == "Deep Lake":

        def open_deeplake() -> Callable[[list[int]], int]:
            import deeplake

            ds = deeplake.open_read_only(f"file://{where / 'data'}")
            names = [column.name for column in ds.schema.columns]

            def take(rows: list[int]) -> int:
                columns = {name: ds[name][rows] for name in names}
                return len([dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)])

            return take

        return open_deeplake

    def open_ours() -> Callable[[list[int]], int]:
        import stable_explore as se

        ds = se.load("peers", home=where / "home").with_format("python")
        return lambda rows: len(ds.__getitems__(rows))

    return open_ours


def child_read(system: str, n: int, where: Path) -> dict[str, float]:
    import numpy as np

    _import_for(system)
    opener = _opener(system, where)
    rng = np.random.default_rng(SEED)
    first = rng.choice(n, size=TAKE, replace=False).tolist()
    started = time.perf_counter()
    take = opener()
    assert take(first) == TAKE
    cold = time.perf_counter() - started
    warm = []
    for _ in range(5):
        rows = rng.choice(n, size=TAKE, replace=False).tolist()
        started = time.perf_counter()
        assert take(rows) == TAKE
        warm.append(time.perf_counter() - started)
    return {"cold_ms": cold * 1000, "warm_ms": statistics.median(warm) * 1000}


# --- the parent: rounds of fresh processes ----------------------------------------------------------------


def _spawn(mode: str, system: str, case: str, n: int, where: Path) -> dict[str, float] | str:
    here = str(Path(__file__).resolve())
    command = [sys.executable, here, "--child", mode, "--system", system, "--case", case, "--rows", str(n)]
    done = subprocess.run([*command, "--where", str(where)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit {done.returncode}"
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _cell(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{statistics.median(values):.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def run(case: str, n: int, rounds: int, systems: list[str], root: Path) -> None:
    results: dict[str, dict[str, list[float]]] = {
        s: {"build": [], "cpu": [], "cold": [], "warm": [], "growth": []} for s in systems
    }
    errors: dict[str, str] = {}
    for round_number in range(rounds):
        order = systems[round_number % len(systems) :] + systems[: round_number % len(systems)]
        for system in order:
            if system in errors:
                continue
            peaks = []
            for rows in (n // 5, n):
                where = Path(tempfile.mkdtemp(prefix="peer-", dir=root))
                built = _spawn("build", system, case, rows, where)
                if isinstance(built, str):
                    errors[system] = built
                    break
                peaks.append(built["rss_mb"])
                if rows == n:
                    results[system]["build"].append(built["seconds"])
                    results[system]["cpu"].append(built["cpu"])
                    read = _spawn("read", system, case, rows, where)
                    if isinstance(read, str):
                        errors[system] = read
                    else:
                        results[system]["cold"].append(read["cold_ms"])
                        results[system]["warm"].append(read["warm_ms"])
                shutil.rmtree(where, ignore_errors=True)
            if len(peaks) == 2:
                results[system]["growth"].append(peaks[1] - peaks[0])
            print(f"  round {round_number + 1}: {system} done", file=sys.stderr, flush=True)
    _print(case, n, rounds, systems, results, errors)


def _print(
    case: str,
    n: int,
    rounds: int,
    systems: list[str],
    results: dict[str, dict[str, list[float]]],
    errors: dict[str, str],
) -> None:
    what = "a distinct ~1.9 KB JPEG, a 10-class label, a float32" if case == "images" else "key, label, float, 256 B"
    load = os.getloadavg()
    print(f"\n{n:,} rows ({what}); fresh process per measurement; median (range) of {rounds}", end="")
    print(f"; load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    header = f"{'':14s} {'build s':>22s} {'build CPU s':>22s} {'first 256 random, fresh open ms':>34s}"
    header += f" {'warm 256 random ms':>22s}"
    print(header + f" {'peak RSS growth ' + f'{n // 5 // 1000}k -> {n // 1000}k MB':>30s}")
    for system in systems:
        if system in errors:
            print(f"{system:14s} failed: {errors[system]}")
            continue
        r = results[system]
        print(
            f"{system:14s} {_cell(r['build']):>22s} {_cell(r['cpu']):>22s} {_cell(r['cold'], 1):>34s} "
            f"{_cell(r['warm'], 2):>22s} "
            f"{_cell(r['growth'], 0):>30s}"
        )

    def median(system: str, metric: str) -> float | None:
        values = results.get(system, {}).get(metric) or []
        return statistics.median(values) if values and system not in errors else None

    print()
    for mine, theirs, goal in (
        ("ours rows", "Lance", "<= 1.0"),
        ("ours columns", "raw IPC", "<= 1.2"),
        ("ours columns", "Lance", "<= 0.67 (1.5x faster)"),
    ):
        a, b = median(mine, "build"), median(theirs, "build")
        if a is not None and b is not None:
            print(f"build: {mine} / {theirs} = {a / b:.2f} (goal {goal})", end="")
            a, b = median(mine, "cpu"), median(theirs, "cpu")
            print(f"; CPU time: {a / b:.2f}" if a is not None and b is not None else "")
    a, b = median("ours columns", "cold"), median("Lance", "cold")
    if a is not None and b is not None:
        print(f"first random read: ours / Lance = {a / b:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["images", "small"], default="images")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=SYSTEMS, help="these systems only")
    parser.add_argument("--dir", type=Path, help="where the builds go (default: a temporary folder)")
    parser.add_argument("--child", choices=["build", "read"], help=argparse.SUPPRESS)
    parser.add_argument("--system", help=argparse.SUPPRESS)
    parser.add_argument("--where", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "build":
        print(json.dumps(child_build(args.system, args.case, args.rows, args.where)))
        return
    if args.child == "read":
        print(json.dumps(child_read(args.system, args.rows, args.where)))
        return
    systems = [s for s in SYSTEMS if not args.only or s in args.only]
    os.environ.setdefault("DEEPLAKE_DISABLE_TELEMETRY", "1")
    root = Path(tempfile.mkdtemp(prefix="bench-peers-", dir=args.dir))
    try:
        run(args.case, args.rows, args.rounds, systems, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
