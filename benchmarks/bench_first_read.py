"""Benchmark: the first random read from a fresh open (issue 26), against raw Arrow IPC and Lance.

Workload: ``--rows`` rows (default 100k), each a distinct JPEG of about 1.9 KB (noise, made with
Pillow here; no downloads), a 10-class label and a float; record batches of 1,000 rows. Each system
stores the same rows once; then, per round, each system runs in a fresh Python process (imports done
before the clock starts): open, take 256 random rows (the same rows for all), and hand them out as an
Arrow table. The order of the systems rotates each round; medians of ``--repeat`` rounds are printed,
with the ratio to Lance's.

- raw Arrow IPC: ``pyarrow.ipc.open_file`` over a memory map, each row sliced from its record
  batch, one table of them (no check of any byte);
- Lance: ``lance.dataset(path).take(indices)``;
- stable-explore: ``se.load(name, home=...).select(indices).to_arrow()``, every byte handed out
  checked against its digest.

``--profile`` also prints where a fresh stable-explore read spends its time (cProfile, top entries).

Run::

    python benchmarks/bench_first_read.py               # 100k rows, 3 rounds
    python benchmarks/bench_first_read.py --rows 20000 --repeat 5
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BATCH = 1000
SYSTEMS = ("arrow", "lance", "stable-explore")
NAMES = [f"class{i}" for i in range(10)]


def _jpegs(count: int, seed: int = 0) -> list[bytes]:
    """``count`` distinct JPEGs of about 1.9 KB: 36x36 noise at quality 85."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pixels = rng.integers(0, 256, size=(36, 36, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
        out.append(buffer.getvalue())
    return out


def _columns(rows: int) -> dict[str, object]:
    rng = np.random.default_rng(1)
    return {
        "image": _jpegs(rows),
        "label": rng.integers(0, 10, rows).tolist(),
        "value": rng.random(rows).astype(np.float32).tolist(),
    }


def _write_all(root: Path, rows: int) -> dict[str, str]:
    """Each system's copy of the same rows; returns where each is."""
    import lance
    import pyarrow as pa
    import pyarrow.ipc as ipc

    import stable_explore as se

    data = _columns(rows)
    table = pa.table(
        {
            "image": pa.array(data["image"], pa.binary()),
            "label": pa.array(data["label"], pa.int64()),
            "value": pa.array(data["value"], pa.float32()),
        }
    )
    arrow_path = root / "raw.arrow"
    with pa.OSFile(str(arrow_path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=BATCH):
            writer.write_batch(batch)
    lance_path = root / "lance"
    lance.write_dataset(table, str(lance_path), max_rows_per_group=BATCH)
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES), value=se.Value("float32"))
    images, labels, values = data["image"], data["label"], data["value"]
    assert isinstance(images, list)
    assert isinstance(labels, list)
    assert isinstance(values, list)
    example_rows = ({"image": images[i], "label": labels[i], "value": values[i]} for i in range(rows))
    home = root / "home"
    se.build(example_rows, features, name="first", home=str(home), batch_size=BATCH, progress=False)
    return {"arrow": str(arrow_path), "lance": str(lance_path), "stable-explore": str(home)}


def _child(system: str, where: str, indices_file: str, profile: bool) -> None:
    """One fresh read, timed in this process; prints JSON with the milliseconds."""
    import numpy.ma  # noqa: F401  # imported by pandas in any notebook; numpy imports it lazily on a first np.unique

    indices = np.load(indices_file)
    if system == "arrow":
        import pyarrow as pa
        import pyarrow.ipc as ipc

        def read() -> object:  # each row sliced from its record batch (a take over the joined file copies it all)
            reader = ipc.open_file(pa.memory_map(where))
            batches = {int(b): reader.get_batch(int(b)) for b in np.unique(indices // BATCH)}
            rows = [batches[int(i) // BATCH].slice(int(i) % BATCH, 1) for i in indices]
            return pa.Table.from_batches(rows).combine_chunks()
    elif system == "lance":
        import lance

        def read() -> object:
            return lance.dataset(where).take(indices)
    else:
        import stable_explore as se

        load = se.load  # its modules imported before the clock, as the other systems' are (the package is lazy)

        def read() -> object:
            return load("first", home=where).select(indices).to_arrow()

    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        table = read()
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(25)
        return
    start = time.perf_counter()
    table = read()
    elapsed = time.perf_counter() - start
    rows = getattr(table, "num_rows", None)
    print(json.dumps({"ms": elapsed * 1000, "rows": rows}))


def _run_child(system: str, where: str, indices_file: str, *, profile: bool = False) -> float:
    command = [sys.executable, __file__, "--child", system, "--where", where, "--indices", indices_file]
    if profile:
        command.append("--profile")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        msg = f"{system} failed: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    if profile:
        print(done.stderr)
        return 0.0
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["ms"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--take", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="also profile one fresh stable-explore read")
    parser.add_argument("--keep", type=Path, help="write the copies here (reused when present)")
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--where", help=argparse.SUPPRESS)
    parser.add_argument("--indices", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.where, args.indices, args.profile)
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-first-read-"))
    root.mkdir(parents=True, exist_ok=True)
    where_file = root / f"where-{args.rows}.json"
    if where_file.exists():
        where = json.loads(where_file.read_text())
    else:
        start = time.perf_counter()
        where = _write_all(root, args.rows)
        where_file.write_text(json.dumps(where))
        print(f"wrote {args.rows:,} rows for each system in {time.perf_counter() - start:.1f} s")
    indices_file = str(root / "indices.npy")
    np.save(indices_file, np.random.default_rng(7).choice(args.rows, size=args.take, replace=False))
    times: dict[str, list[float]] = {system: [] for system in SYSTEMS}
    for round_ in range(args.repeat):
        order = SYSTEMS[round_ % len(SYSTEMS) :] + SYSTEMS[: round_ % len(SYSTEMS)]
        for system in order:
            times[system].append(_run_child(system, where[system], indices_file))
    print(f"\nfirst {args.take} random rows from a fresh open, {args.rows:,} rows; medians of {args.repeat} processes")
    lance_ms = statistics.median(times["lance"])
    for system in SYSTEMS:
        median = statistics.median(times[system])
        spread = ", ".join(f"{t:.1f}" for t in times[system])
        print(f"  {system:15s} {median:8.2f} ms   ({spread})   {median / lance_ms:5.2f}x Lance")
    if args.profile:
        print("\nprofile of one fresh stable-explore read:")
        _run_child("stable-explore", where["stable-explore"], indices_file, profile=True)


if __name__ == "__main__":
    main()
