"""Benchmark: the dataset handle of stable-explore, from cache hit to rows to pandas.

The workload is bench_cache.py's: rows of a 64x64 JPEG (512 distinct, cycled), a ClassLabel (10 names,
as ints), a float32 and a string. Everything lives in one temp dir (catalog home, IPython dir, HF caches
with HF offline), removed at the end. Measured in one run, on caches of N_small and N_large rows
(10k and 200k by default; 2k and 20k with ``--quick``):

1. Cache hits. ``se.build(gen, features, args=(n,), home=tmp)`` builds each size once; then the median
   of 20 hits (interleaved across sizes, after 2 warm-up hits) is timed. A hit fingerprints the generator
   (source, the globals it reads, arguments, features), looks the fingerprint up and opens the version's
   metadata; no shard is mapped. It should not grow with the row count: the N_large/N_small ratio is
   reported. The same through the IPython magic: a real ``InteractiveShell`` runs ``%load_ext
   stable_explore``, defines the generator and features in its namespace, builds each size with
   ``%stable_cache magic_rows_n = gen(n) --features features --quiet;`` and then times the same cell again
   with ``shell.run_cell(..., store_history=True)``, as a kernel would; ``run_line_magic`` (no cell
   machinery) and ``run_cell("pass")`` (IPython's own per-cell cost) are shown for reference.
2. 256 random rows (fixed seed) decoded, on the N_large cache: ours ``ds.__getitems__(idx)`` (a list of
   dicts, images as PIL) vs HF ``datasets`` opened from its Arrow file with its ``Image()`` feature
   decoding (``hf_ds[idx]``: a dict of lists, images as PIL). (a) as returned, (b) with ``img.load()``
   called on every image of both. Note that HF's ``Image.decode_example`` already calls ``load()``
   (pixels decoded) while ours opens images lazily, so (a) compares unequal work; (b) is like for like.
   Median of 20 after 2 warm-up calls, contenders interleaved. Opening a fresh handle plus one take is
   shown for reference (ours maps and fully validates the shards it touches on first use).
3. ``to_pandas(images="bytes")`` of 10k rows of the N_large cache: a contiguous ``ds[:10000]`` and a random
   10k-row view (fixed seed, unsorted), vs raw pyarrow on the same shard files (memory-mapped with
   ``pyarrow.ipc.open_file(pa.memory_map(path)).read_all()``, concatenated, the 4 feature columns
   selected, then ``.slice(0, 10000).to_pandas()`` / ``.take(idx).to_pandas()``), and HF's
   ``hf_ds.select(rows).to_pandas()`` for reference. Ours also makes the label column a Categorical of
   class names and sets the index to row numbers; raw pyarrow leaves ints and a RangeIndex.

Targets (informational, the script always exits 0): hit time flat in the row count (N_large/N_small
<= 1.5x); a magic hit through ``run_cell`` < 100 ms; the 256-row decode <= HF's time in (a) and (b);
ours ``to_pandas`` <= 1.2x raw pyarrow's for both selections.

Run::

    python benchmarks/bench_dataset.py            # 10k and 200k rows, about a minute on 2 cores
    python benchmarks/bench_dataset.py --quick    # 2k and 20k rows, well under 40 s
"""

from __future__ import annotations

import argparse
import atexit
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _report import ms as _ms
from _report import rule as _rule
from _report import verdict as _verdict
from bench_cache import LABEL_NAMES, NUM_JPEGS, _set_offline_env, hf_features, keyed_rows, make_jpegs, our_features

SEED = 1234
DEFAULT_SIZES = (10_000, 200_000)
QUICK_SIZES = (2_000, 20_000)
HIT_REPEATS = 20
HIT_WARMUP = 2
TAKE_ROWS = 256
TAKE_REPEATS = 20
TAKE_WARMUP = 2
OPEN_REPEATS = 3
PANDAS_ROWS = 10_000
PANDAS_REPEATS = 15
QUICK_PANDAS_REPEATS = 10
PANDAS_WARMUP = 1

FLAT_TARGET = 1.5
MAGIC_TARGET_S = 0.100
TAKE_TARGET = 1.0
PANDAS_TARGET = 1.2

COLUMNS = ["image", "label", "score", "caption"]

# The generator's images: a module global, so the catalog's fingerprint hashes them (as it would a user's).
JPEGS: list[bytes] = []


def bench_rows(n: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The generator handed to ``se.build``: bench_cache's keyed rows over this module's JPEGs."""
    yield from keyed_rows(n, JPEGS)


# What the IPython shell runs to define its own generator and features (the images are pushed in first).
SHELL_SETUP = f"""
import stable_explore as se

features = se.Features(
    image=se.Image(), label=se.ClassLabel(names={LABEL_NAMES!r}), score=se.Value("float32"), caption=se.Value("string")
)

def gen(n):
    for i in range(n):
        yield f"row-{{i}}", {{"image": jpegs[i % len(jpegs)], "label": (i * 7) % 10, "score": i * 0.001,
                            "caption": f"caption {{i}}"}}
"""


# --- timing ------------------------------------------------------------------------


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def interleaved_medians(
    contenders: dict[str, Callable[[], Any]], repeats: int, warmup: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """Median time of each contender; rounds run every contender once, in turn, so drift hits all alike.

    Also returns each contender's last result, for checks made outside the timing.
    """
    last: dict[str, Any] = {}
    for _ in range(warmup):
        for name, fn in contenders.items():
            last[name] = fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            seconds, last[name] = timed(fn)
            times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}, last


# --- 1. cache hits -----------------------------------------------------------------


@dataclass
class HitResults:
    sizes: tuple[int, int]
    build_s: dict[int, float] = field(default_factory=dict)
    api: dict[int, float] = field(default_factory=dict)
    magic_build_s: dict[int, float] = field(default_factory=dict)
    magic_cell: dict[int, float] = field(default_factory=dict)
    magic_line: dict[int, float] = field(default_factory=dict)
    ipython_pass: float = 0.0
    shards: dict[int, int] = field(default_factory=dict)


def bench_api_hits(home: Path, sizes: tuple[int, int], hits: HitResults) -> Any:
    """Build each size once with ``se.build``, then time hits; returns the large dataset (from a hit)."""
    import stable_explore as se

    features = our_features()

    def build(n: int) -> Any:
        return se.build(bench_rows, features, name=f"rows_{n}", args=(n,), home=home, progress=False)

    for n in sizes:
        hits.build_s[n], ds = timed(lambda n=n: build(n))
        _expect(ds.build_info.startswith("built"), f"first se.build of {n} rows did not build: {ds.build_info}")
        _expect(len(ds) == n, f"built {len(ds)} rows, expected {n}")
        hits.shards[n] = ds.num_shards
    medians, last = interleaved_medians({str(n): lambda n=n: build(n) for n in sizes}, HIT_REPEATS, HIT_WARMUP)
    for n in sizes:
        ds = last[str(n)]
        _expect(ds.build_info.startswith("reused") and len(ds) == n, f"a timed hit was not a hit: {ds.build_info}")
        hits.api[n] = medians[str(n)]
    return last[str(sizes[1])]


def start_shell(ipython_dir: Path) -> Any:
    """A real IPython shell (history in a temp dir) with the extension loaded and the generator defined."""
    os.environ["IPYTHONDIR"] = str(ipython_dir)
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    _run_cell(shell, "%load_ext stable_explore")
    shell.push({"jpegs": JPEGS})
    _run_cell(shell, SHELL_SETUP)
    return shell


def _run_cell(shell: Any, cell: str) -> Any:
    result = shell.run_cell(cell, store_history=True)
    if not result.success:
        raise RuntimeError(f"IPython cell failed: {cell.strip()[:80]!r}: {result.error_in_exec!r}")
    return result


def bench_magic_hits(shell: Any, sizes: tuple[int, int], hits: HitResults) -> None:
    def line(n: int) -> str:
        return f"magic_rows_{n} = gen({n}) --features features --quiet;"

    for n in sizes:
        hits.magic_build_s[n], _ = timed(lambda n=n: _run_cell(shell, f"%stable_cache {line(n)}"))
        ds = shell.user_ns[f"magic_rows_{n}"]
        _expect(ds.build_info.startswith("built") and len(ds) == n, f"the magic did not build: {ds.build_info}")
    cells = {f"cell {n}": lambda n=n: _run_cell(shell, f"%stable_cache {line(n)}") for n in sizes}
    lines = {f"line {n}": lambda n=n: shell.run_line_magic("stable_cache", line(n)) for n in sizes}
    medians, _ = interleaved_medians({**cells, **lines, "pass": lambda: _run_cell(shell, "pass")}, HIT_REPEATS, 2)
    for n in sizes:
        ds = shell.user_ns[f"magic_rows_{n}"]
        _expect(ds.build_info.startswith("reused") and len(ds) == n, f"a timed magic was not a hit: {ds.build_info}")
        hits.magic_cell[n] = medians[f"cell {n}"]
        hits.magic_line[n] = medians[f"line {n}"]
    hits.ipython_pass = medians["pass"]


def close_shell(shell: Any) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell.atexit_operations()  # ends the history session; IPython would run it again at exit, so unregister it
    atexit.unregister(shell.atexit_operations)
    shell.cleanup()
    InteractiveShell.clear_instance()


# --- HF ------------------------------------------------------------------------------


def build_hf(n: int, out_dir: Path) -> tuple[float, list[Path]]:
    """HF's own cache of the same rows: ``Dataset.from_generator`` with ``Image()``; returns its Arrow files."""
    import datasets

    def generate() -> Iterator[dict[str, Any]]:
        for _, row in keyed_rows(n, JPEGS):
            yield {**row, "image": {"bytes": row["image"], "path": None}}

    def build() -> list[Path]:
        ds = datasets.Dataset.from_generator(
            generate, features=hf_features(), cache_dir=str(out_dir), fingerprint=f"bench-dataset-{n}"
        )
        return [Path(f["filename"]) for f in ds.cache_files]

    return timed(build)


def open_hf(files: list[Path]) -> Any:
    """HF's dataset over its Arrow files (memory-mapped), images decoded by the ``Image()`` feature."""
    import datasets

    parts = [datasets.Dataset.from_file(str(f)) for f in files]
    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)


# --- 2. random rows decoded ---------------------------------------------------------


@dataclass
class TakeResults:
    lazy: dict[str, float] = field(default_factory=dict)
    loaded: dict[str, float] = field(default_factory=dict)
    cold: dict[str, float] = field(default_factory=dict)
    hf_eager: bool = False


def _load_all(images: list[Any]) -> list[Any]:
    for image in images:
        image.load()
    return images


def bench_take(ds: Any, hf: Any, hf_files: list[Path], home: Path, n: int) -> TakeResults:
    import stable_explore as se

    idx = [int(i) for i in np.random.default_rng(SEED).choice(n, size=min(TAKE_ROWS, n), replace=False)]
    contenders = {
        "ours lazy": lambda: ds.__getitems__(idx),
        "hf lazy": lambda: hf[idx],
        "ours loaded": lambda: _load_all([row["image"] for row in ds.__getitems__(idx)]),
        "hf loaded": lambda: _load_all(hf[idx]["image"]),
    }
    medians, last = interleaved_medians(contenders, TAKE_REPEATS, TAKE_WARMUP)
    _check_same_rows(last["ours lazy"], last["hf lazy"])
    out = TakeResults()
    for kind in ("ours", "hf"):
        out.lazy[kind] = medians[f"{kind} lazy"]
        out.loaded[kind] = medians[f"{kind} loaded"]
    # Whether HF hands back decoded pixels: a loaded PIL image has dropped its file pointer.
    out.hf_eager = all(getattr(img, "fp", None) is None for img in hf[idx[:8]]["image"])

    # Reference: open a fresh handle as a user would, then take once (OS page cache warm).
    def ours_cold() -> Any:
        return se.load(f"rows_{n}", home=home).__getitems__(idx)

    def hf_cold() -> Any:
        return open_hf(hf_files)[idx]

    cold, _ = interleaved_medians({"ours": ours_cold, "hf": hf_cold}, OPEN_REPEATS, 0)
    out.cold = cold
    return out


def _check_same_rows(ours: list[dict[str, Any]], hf: dict[str, list[Any]]) -> None:
    for column in ("label", "caption"):
        _expect([row[column] for row in ours] == hf[column], f"ours and HF disagree on column {column!r}")
    scores = np.array([row["score"] for row in ours], dtype=np.float32)
    _expect(np.array_equal(scores, np.array(hf["score"], dtype=np.float32)), "ours and HF disagree on 'score'")
    for row, image in zip(ours[:16], hf["image"][:16], strict=True):
        _expect(np.array_equal(np.asarray(row["image"]), np.asarray(image)), "ours and HF decode different pixels")


# --- 3. to_pandas ------------------------------------------------------------------


@dataclass
class PandasResults:
    rows: int = 0
    contiguous: dict[str, float] = field(default_factory=dict)
    random: dict[str, float] = field(default_factory=dict)


def raw_table(ds: Any) -> Any:
    """The version's shard files through pyarrow alone: memory-mapped, concatenated, the feature columns."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from stable_explore.cache import read_sharded_cache_meta

    paths = read_sharded_cache_meta(ds.cache_dir).shard_paths
    tables = [ipc.open_file(pa.memory_map(str(p), "r")).read_all() for p in paths]
    return pa.concat_tables(tables).select(COLUMNS)


def bench_pandas(ds: Any, hf: Any, n: int, repeats: int) -> PandasResults:
    import pyarrow as pa

    rows = min(PANDAS_ROWS, n)
    idx = np.random.default_rng(SEED + 1).choice(n, size=rows, replace=False)
    idx_array = pa.array(idx)
    idx_list = idx.tolist()
    raw = raw_table(ds)
    out = PandasResults(rows=rows)

    contiguous = {
        "ours": lambda: ds[:rows].to_pandas(images="bytes"),
        "raw": lambda: raw.slice(0, rows).to_pandas(),
        "hf": lambda: hf.select(range(rows)).to_pandas(),
    }
    out.contiguous, last = interleaved_medians(contiguous, repeats, PANDAS_WARMUP)
    _check_same_frame(last["ours"], last["raw"])

    scattered = {
        "ours": lambda: ds[idx].to_pandas(images="bytes"),
        "raw": lambda: raw.take(idx_array).to_pandas(),
        "hf": lambda: hf.select(idx_list).to_pandas(),
    }
    out.random, last = interleaved_medians(scattered, repeats, PANDAS_WARMUP)
    _check_same_frame(last["ours"], last["raw"])
    return out


def _check_same_frame(ours: Any, raw: Any) -> None:
    _expect(len(ours) == len(raw), "ours and raw pyarrow gave different row counts")
    for column in ("image", "caption", "score"):
        _expect(ours[column].tolist() == raw[column].tolist(), f"ours and raw pyarrow disagree on {column!r}")
    _expect(ours["label"].cat.codes.tolist() == raw["label"].tolist(), "ours and raw pyarrow disagree on 'label'")


# --- report ------------------------------------------------------------------------


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise AssertionError(message)


def print_header(sizes: tuple[int, int]) -> None:
    import datasets
    import IPython
    import PIL
    import pyarrow as pa

    import stable_explore

    print("stable-explore dataset benchmark")
    print("================================")
    print(
        f"workload: {sizes[0]:,} and {sizes[1]:,} rows = 64x64 JPEG ({NUM_JPEGS} distinct, cycled) "
        "+ ClassLabel(10 names, as ints) + float32 + string"
    )
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, pyarrow {pa.__version__}, datasets {datasets.__version__}, "
        f"Pillow {PIL.__version__}, IPython {IPython.__version__}, stable-explore {stable_explore.__version__}"
    )
    if hasattr(os, "getloadavg"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average at the end (1, 5, 15 min): {load}; other load on the machine shifts every figure")


def print_hits(hits: HitResults) -> None:
    small, large = hits.sizes
    _rule(
        f"1. CACHE HIT: median of {HIT_REPEATS} hits (sizes interleaved, after {HIT_WARMUP} warm-up); lower is better"
    )
    header = f"{'':<48}{f'{small:,} rows':>14}{f'{large:,} rows':>14}{'large/small':>13}"
    print(header)

    def line(label: str, values: dict[int, float], ratio: bool = True) -> None:
        tail = f"{values[large] / values[small]:>12.2f}x" if ratio else ""
        print(f"{label:<48}{_ms(values[small]):>14}{_ms(values[large]):>14}{tail}")

    print(f"{'first build, se.build (ref)':<48}{hits.build_s[small]:>12.2f} s{hits.build_s[large]:>12.2f} s")
    print(f"{'first build, %stable_cache (ref)':<48}", end="")
    print(f"{hits.magic_build_s[small]:>12.2f} s{hits.magic_build_s[large]:>12.2f} s")
    print(f"{'shards':<48}{hits.shards[small]:>14}{hits.shards[large]:>14}")
    line("hit: se.build(gen, features, args=(n,))", hits.api)
    line("hit: shell.run_cell('%stable_cache ...;')", hits.magic_cell)
    line("hit: shell.run_line_magic('stable_cache', ...)", hits.magic_line)
    baseline = "IPython alone: shell.run_cell('pass') (ref)"
    print(f"{baseline:<48}{_ms(hits.ipython_pass):>14}")
    print("run_cell uses store_history=True as a kernel does (history in a temp sqlite file)")
    print()
    api_ratio = hits.api[large] / hits.api[small]
    magic_ratio = hits.magic_cell[large] / hits.magic_cell[small]
    flat = f"target <= {FLAT_TARGET:.1f}x"
    print(
        f"se.build hit, {large:,} / {small:,} rows:   {api_ratio:.2f}x   {flat}   {_verdict(api_ratio <= FLAT_TARGET)}"
    )
    print(
        f"magic hit,    {large:,} / {small:,} rows:   {magic_ratio:.2f}x   {flat}   "
        f"{_verdict(magic_ratio <= FLAT_TARGET)}"
    )
    worst = max(hits.magic_cell.values())
    print(
        f"magic hit through run_cell (slower size): {_ms(worst)}   target < {MAGIC_TARGET_S * 1000:.0f} ms   "
        f"{_verdict(worst < MAGIC_TARGET_S)}"
    )


def print_take(take: TakeResults, n: int) -> None:
    _rule(f"2. {TAKE_ROWS} RANDOM ROWS DECODED from {n:,} (seed {SEED}); median of {TAKE_REPEATS}; lower is better")
    print("ours: ds.__getitems__(idx) -> list of dicts; HF: hf_ds[idx] (Image() decoding) -> dict of lists")
    print(f"{'':<44}{'ours':>12}{'HF':>12}{'ours/HF':>10}")
    for label, values in (
        ("(a) as returned", take.lazy),
        ("(b) img.load() on every image", take.loaded),
        ("(ref) open a fresh handle + one take", take.cold),
    ):
        ratio = values["ours"] / values["hf"]
        print(f"{label:<44}{_ms(values['ours']):>12}{_ms(values['hf']):>12}{ratio:>9.2f}x")
    eager = "already loaded (pixels decoded)" if take.hf_eager else "lazily opened"
    print(f"HF's images as returned: {eager}; ours as returned: lazily opened (header parsed only)")
    print("(ref) ours: se.load + take (maps and validates the shards it touches); HF: Dataset.from_file + take")
    for label, values in (("(a)", take.lazy), ("(b)", take.loaded)):
        ratio = values["ours"] / values["hf"]
        print(f"{label} ours/HF {ratio:.2f}x   target <= {TAKE_TARGET:.2f}x   {_verdict(ratio <= TAKE_TARGET)}")


def print_pandas(pandas: PandasResults, n: int, repeats: int) -> None:
    rows = pandas.rows
    _rule(f"3. to_pandas(images='bytes') OF {rows:,} ROWS of {n:,}; median of {repeats}; lower is better")
    print(f"{'':<28}{'ours':>12}{'raw pyarrow':>14}{'HF (ref)':>12}{'ours/raw':>10}{'ours/HF':>9}")
    for label, values in (("contiguous ds[:10000]", pandas.contiguous), ("random 10k view", pandas.random)):
        print(
            f"{label:<28}{_ms(values['ours']):>12}{_ms(values['raw']):>14}{_ms(values['hf']):>12}"
            f"{values['ours'] / values['raw']:>9.2f}x{values['ours'] / values['hf']:>8.2f}x"
        )
    print("ours: ds[sel].to_pandas(images='bytes') (label Categorical, index = row numbers)")
    print("raw: shards memory-mapped and concatenated once, 4 feature columns; .slice()/.take(idx).to_pandas()")
    print("HF: hf_ds.select(rows).to_pandas() (image column as {'bytes', 'path'} dicts)")
    for label, values in (("contiguous", pandas.contiguous), ("random", pandas.random)):
        ratio = values["ours"] / values["raw"]
        print(
            f"{label:<10} ours/raw pyarrow {ratio:.2f}x   target <= {PANDAS_TARGET:.1f}x   "
            f"{_verdict(ratio <= PANDAS_TARGET)}"
        )


def print_summary(hits: HitResults, take: TakeResults, pandas: PandasResults) -> None:
    small, large = hits.sizes
    api_ratio = hits.api[large] / hits.api[small]
    magic_ratio = hits.magic_cell[large] / hits.magic_cell[small]
    worst = max(hits.magic_cell.values())
    rows = [
        (f"se.build hit flat, {large:,}/{small:,} <= {FLAT_TARGET}x", f"{api_ratio:.2f}x", api_ratio <= FLAT_TARGET),
        (f"magic hit flat, {large:,}/{small:,} <= {FLAT_TARGET}x", f"{magic_ratio:.2f}x", magic_ratio <= FLAT_TARGET),
        (f"magic hit (run_cell) < {MAGIC_TARGET_S * 1000:.0f} ms", _ms(worst), worst < MAGIC_TARGET_S),
    ]
    for label, values in (("as returned", take.lazy), ("img.load()", take.loaded)):
        ratio = values["ours"] / values["hf"]
        rows.append((f"{TAKE_ROWS} random rows, {label}, <= HF", f"{ratio:.2f}x", ratio <= TAKE_TARGET))
    for label, values in (("contiguous", pandas.contiguous), ("random", pandas.random)):
        ratio = values["ours"] / values["raw"]
        rows.append((f"to_pandas {label} <= {PANDAS_TARGET}x raw pyarrow", f"{ratio:.2f}x", ratio <= PANDAS_TARGET))
    _rule("TARGETS (informational; the exit status is 0 either way)")
    for label, value, ok in rows:
        print(f"{label:<48}{value:>12}   {_verdict(ok)}")


# --- main --------------------------------------------------------------------------


def run(sizes: tuple[int, int], pandas_repeats: int) -> None:
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="bench_dataset-"))
    shell = None
    try:
        _set_offline_env(root)
        home = root / "stable-explore"
        os.environ["STABLE_EXPLORE_HOME"] = str(home)  # the magic's catalog (se.build gets home= too)
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
        JPEGS[:] = make_jpegs()

        hits = HitResults(sizes)
        ds = bench_api_hits(home, sizes, hits)
        shell = start_shell(root / "ipython")
        bench_magic_hits(shell, sizes, hits)
        close_shell(shell)
        shell = None

        n = sizes[1]
        hf_build_s, hf_files = build_hf(n, root / "hf")
        hf = open_hf(hf_files)
        take = bench_take(ds, hf, hf_files, home, n)
        pandas = bench_pandas(ds, hf, n, pandas_repeats)

        print_header(sizes)
        print(f"HF datasets cache of {n:,} rows built in {hf_build_s:.2f} s (Dataset.from_generator, offline)")
        print_hits(hits)
        print_take(take, n)
        print_pandas(pandas, n, pandas_repeats)
        print_summary(hits, take, pandas)
        print()
        print(f"total benchmark time {time.perf_counter() - started:.0f} s")
    finally:
        if shell is not None:
            close_shell(shell)
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_SIZES[0]:,} and {QUICK_SIZES[1]:,} rows instead of {DEFAULT_SIZES[0]:,} and {DEFAULT_SIZES[1]:,}",
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    run(sizes, QUICK_PANDAS_REPEATS if args.quick else PANDAS_REPEATS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
