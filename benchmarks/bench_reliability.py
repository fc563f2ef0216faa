"""Benchmark: reliability and security figures of issue 12, and what the per-batch digests cost on reads.

Everything runs on real files in one temp dir, removed at the end. The workload is bench_cache.py's:
rows of a 64x64 JPEG (512 distinct, cycled), a ClassLabel (10 names), a float32 and a string.

1. Corruptions on plain reads. A cache of 5,000 rows (record batches of 500) is built; each trial
   restores its pristine files, flips one random bit at a random offset of a random file (a shard
   nine times in ten, ``_metadata.json`` otherwise), opens the cache afresh in a new handle (and
   forgets which batches this process checked), and reads every column of every row, the key and
   row-hash columns too (``to_arrow(with_row_columns=True)``). Outcomes: refused (a
   ``StableExploreError``), silently wrong (no error, values differ from the pristine read),
   unchanged (no error, the true values: the flip hit padding or metadata no reader uses; verify and
   fsck still report the file), raw (another exception) and segfaults (the trials run in a child
   process; a child killed by a signal counts one segfault and the next child goes on from the
   following trial). The same flips on a copy without batch digests are shown for comparison.
2. Traversal attempts: column names with separators, ``..``, NUL (through ``Features``, ``[]=`` and
   ``update``), ``name`` / ``version_id`` / ``parent`` / ``source_fingerprint`` payloads written into a
   hand-made ``_metadata.json`` then exported with ``images="path"``, a version directory and an export
   folder that are symlinks out. Refused = an error and no file written outside.
3. Bombs: PNG, JPEG and GIF headers declaring sizes over PIL's bomb limit, truncated PNG and JPEG, bare
   headers, given as bytes, paths and dicts at build; stored bombs read back (``ds[i]``, ``to_pandas``
   with ``pil`` and ``thumbnail``) and thumbnailed. Refused = a ``StableExploreError`` (at build, an
   ``EncodingError`` naming row, key and field).
4. Batch-digest read overhead, measured in the same run on the same shard files (hard links): the
   version as written (revision 2, batch digests checked) against a copy of it whose metadata has no
   batch digests (revision 1, unchecked). Interleaved (alternating which goes first), medians. Warm =
   batches already checked in this process (the steady state); cold = a new handle after
   ``forget("checked batches", "opened shards")``, on rows not read before in that handle (every
   batch touched is hashed).
   Reads: 256 random rows decoded (``__getitems__``, bench_dataset.py's take), ``to_pandas`` of 10k
   contiguous and 10k random rows (bench_dataset.py's), and the browser's 64 thumbnails
   (``ShardBrowser._thumbnails`` with a fresh thumbnail cache, bench_browser.py's kernel measure).
   Cold first reads hash every (batch, column) they touch, so they cost more by design.
5. fsck MB/s over a catalog of the read-overhead cache (page cache warm: the files were just written
   and read; this measures the hashing and checking, the disk is not the limit here), and verify's.

6. Kills: a child runs a build (moves ``latest``), a saved edit with a tag and ``gc``; it is SIGKILLed at a
   random moment between the end of its imports and the workload's measured duration.
7. Injected failures: the same workload, with the N-th call of one file-system operation failing
   (``write``: ``os.write``/``pwrite``/``Path.write_text``/``write_bytes``; ``fsync``, ``rename``,
   ``replace``, ``link``, ``unlink``), for every N the workload reaches
   (``--full``; the first, middle and last without), in ``raise`` mode (``OSError(EIO)``) and ``crash``
   mode (SIGKILL inside the call). Survived = ``se.load`` of latest opens and verifies, every ref points at
   a whole version, and after ``gc`` (which sweeps what the dead child left) ``fsck`` finds nothing; a
   failure raised to the user is also counted by kind (a ``StableExploreError``, or raw). See
   tests/reliability/faults.py.
8. gc racing builds: one process loops builds of two sources (each later build a cache hit), another
   loops ``gc(keep=0)`` and ``gc(keep=1)``; failures of either, and whether latest is whole after.
9. HTML payloads: 23 payloads in the 6 places user data reaches HTML (card description, license, class
   name; the versions table's message; the diff card's keys and metadata): escaped = no markup of the
   user's reached the page (parsed as a browser would) and the text is shown as it is.

Target (informational; the script exits 0 when it ran): batch-digest overhead within 10% warm.

Run::

    python benchmarks/bench_reliability.py          # 60 corruption trials, 20k-row read cache, 10 kills, ~3 minutes
    python benchmarks/bench_reliability.py --full   # 330 corruption trials, 200k-row read cache, 60 kills,
                                                    # every injected failure: about 20 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from _report import rule
from bench_cache import keyed_rows, make_jpegs, our_features

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/reliability/trials.py: the hostile inputs the tests use too

WARM_TARGET = 1.10
WARM_CALLS = 15  # warm samples per repeat (short reads on a shared machine: many samples)
CORRUPTION_ROWS = 5_000
CORRUPTION_BATCH = 500


# --- 1. corruptions on plain reads -------------------------------------------------------------

TRIAL_CHILD = """
import json, random, sys
from pathlib import Path
import pyarrow as pa
import stable_explore as se
from stable_explore.storage.kept import forget
from tests.reliability.trials import flip_byte

cache, first, last, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
files = sorted(p for p in cache.iterdir() if p.is_file())
pristine = {p: p.read_bytes() for p in files}
sink = pa.BufferOutputStream()  # an in-memory copy of every column a user can read (the shards are mapped)
table = se.load(cache).to_arrow(with_row_columns=True)
with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
expected = pa.ipc.open_stream(sink.getvalue()).read_all()
shards = [p for p in files if p.suffix == ".arrow"]
meta = cache / "_metadata.json"
for trial in range(first, last):
    rng = random.Random(seed * 100_003 + trial)
    for p, data in pristine.items():
        p.write_bytes(data)
    target = meta if rng.random() < 0.1 else rng.choice(shards)
    offset = rng.randrange(len(pristine[target]))
    print(json.dumps({"trial": trial, "file": target.name, "offset": offset}), flush=True)
    flip_byte(target, offset, 1 << rng.randrange(8))
    forget("checked batches", "opened shards")
    try:
        got = se.load(cache).to_arrow(with_row_columns=True)
        outcome = "unchanged" if got.equals(expected) else "silent"
    except se.StableExploreError as exc:
        outcome = "refused"
    except Exception as exc:
        outcome = "raw:" + type(exc).__name__
    print(json.dumps({"trial": trial, "outcome": outcome}), flush=True)
for p, data in pristine.items():
    p.write_bytes(data)
"""


def corruption_trials(root: Path, trials: int, jpegs: list[bytes], *, digests: bool = True) -> Counter[str]:
    """Outcome counts of ``trials`` one-bit flips; ``digests=False`` runs them on a revision-1 copy (for comparison)."""
    from stable_explore.cache import write_sharded_arrow_cache

    cache = root / ("corrupt" if digests else "corrupt-revision-1") / "c"
    write_sharded_arrow_cache(keyed_rows(CORRUPTION_ROWS, jpegs), our_features(), cache, batch_size=CORRUPTION_BATCH)
    if not digests:
        raw = json.loads((cache / "_metadata.json").read_text())
        for key in ("batch_digests", "metadata_digest"):
            raw.pop(key)
        raw["format_revision"] = 1
        (cache / "_metadata.json").write_text(json.dumps(raw))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outcomes: Counter[str] = Counter()
    next_trial = 0
    while next_trial < trials:
        command = [sys.executable, "-c", TRIAL_CHILD, str(cache), str(next_trial), str(trials), "12"]
        child = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        done = [json.loads(line) for line in child.stdout.splitlines() if '"outcome"' in line]
        outcomes.update(d["outcome"] for d in done)
        next_trial = (done[-1]["trial"] + 1) if done else next_trial
        if child.returncode != 0:
            if child.returncode < 0:
                outcomes["segfault" if child.returncode == -11 else f"killed by signal {-child.returncode}"] += 1
            else:
                outcomes["child error"] += 1
                print(child.stderr[-2000:], file=sys.stderr)
            next_trial += 1
    return outcomes


# --- 2. traversal attempts ------------------------------------------------------------------------

ESCAPES = ["../../../escaped", "..", ".", "a/b", "a\\b", "nul\x00", "/tmp/escaped", "a/../../b", " x"]


def traversal_trials(root: Path, jpegs: list[bytes]) -> tuple[int, int, list[str]]:
    import stable_explore as se
    from stable_explore import Features, Image, Value
    from stable_explore.cache import write_sharded_arrow_cache
    from tests.reliability.trials import edit_metadata

    refused = tried = 0
    let_through: list[str] = []
    outside = root / "outside"
    outside.mkdir()

    def attempt(label: str, action: Callable[[], Any]) -> None:
        nonlocal refused, tried
        tried += 1
        before = set(outside.rglob("*"))
        try:
            action()
        except se.StableExploreError:
            if set(outside.rglob("*")) == before:
                refused += 1
                return
        let_through.append(label)

    for name in ESCAPES:
        attempt(f"Features({name!r})", lambda n=name: Features({n: Value("int64")}))
        attempt(f"features[{name!r}] =", lambda n=name: Features(x=Value("int64")).__setitem__(n, Value("int64")))
        attempt(f"features.update({name!r})", lambda n=name: Features(x=Value("int64")).update({n: Value("int64")}))
    payloads = [f"../../../../{outside.relative_to(root.anchor)}/escaped", str(outside / "escaped"), "..", "a/../../b"]
    for field_name in ("name", "version_id", "parent", "source_fingerprint"):
        for payload in payloads:
            out = root / "hand-made" / f"{field_name}-{payloads.index(payload)}"
            write_sharded_arrow_cache([{"image": jpegs[0]}], Features(image=Image()), out)
            edit_metadata(out, lambda raw, f=field_name, p=payload: raw.update({f: p}), keep_digest=False)
            attempt(f"{field_name}={payload!r}", lambda o=out: se.load(o).to_pandas(images="path"))
    home = root / "home"
    ds = se.build([{"image": jpegs[0]}], Features(image=Image()), name="p", home=home, progress=False)
    (outside / "versions").mkdir()
    moved = outside / "versions" / ds.version
    shutil.copytree(ds.cache_dir, moved)
    shutil.rmtree(ds.cache_dir)
    (home / "p" / "versions" / ds.version).symlink_to(moved)
    attempt("version dir symlinked out of the home", lambda: se.load("p", home=home)[0])
    good = se.build([{"image": jpegs[1]}], Features(image=Image()), name="q", home=home, progress=False)
    (root / "exports" / good.version).mkdir(parents=True)
    (root / "exports" / good.version / "image").symlink_to(outside)
    attempt("export folder symlinked out", lambda: good.to_pandas(images="path", image_dir=root / "exports"))
    return refused, tried, let_through


# --- 3. bombs -------------------------------------------------------------------------------------


def bomb_trials(root: Path, full: bool) -> tuple[int, int, list[str]]:
    import stable_explore as se
    from stable_explore import Features, Image
    from stable_explore.cache import write_sharded_arrow_cache
    from stable_explore.display.images import thumbnail_bytes
    from tests.reliability.trials import bombs, gif_declaring, jpeg_declaring, png_bomb, small_jpeg

    cases = dict(bombs())
    rng = random.Random(3)
    for _ in range(40 if full else 6):
        width = rng.randrange(9500, 60000)
        height = rng.randrange(9500, 60000)
        cases[f"jpeg {width}x{height}"] = jpeg_declaring(width, height)
        cases[f"gif {min(width, 65535)}x{min(height, 65535)}"] = gif_declaring(min(width, 65535), min(height, 65535))
    for side in (10000, 15000) if full else (10000,):
        cases[f"png {side}x{side}"] = png_bomb(side, side)
    refused = tried = 0
    let_through: list[str] = []
    files = root / "bomb-files"
    files.mkdir()
    for index, (label, data) in enumerate(cases.items()):
        path = files / f"{index}.img"
        path.write_bytes(data)
        for how, value in (("bytes", data), ("path", str(path)), ("dict", {"bytes": data})):
            tried += 1
            try:
                se.build([("ok", {"image": small_jpeg()}), ("bad", {"image": value})], Features(image=Image()),
                         name="bombs", home=root / "bomb-home", progress=False, force=True)  # fmt: skip
            except se.EncodingError as exc:
                if "row 1, key 'bad', field 'image'" in str(exc):
                    refused += 1
                    continue
            let_through.append(f"build {label} as {how}")
    # stored bombs (as a cache written without a limit holds them), read back and thumbnailed
    stored = [png_bomb(20000, 20000), jpeg_declaring(65000, 65000), gif_declaring(65535, 65535)]
    out = root / "stored-bombs"
    write_sharded_arrow_cache([{"image": b} for b in stored], Features(image=Image(max_pixels=0)), out)
    meta = json.loads((out / "_metadata.json").read_text())
    meta["features"]["image"].pop("max_pixels")
    meta.pop("metadata_digest")
    (out / "_metadata.json").write_text(json.dumps(meta))
    ds = se.load(out)
    reads: list[tuple[str, Callable[[], Any]]] = []
    for row in range(len(stored)):
        reads.append((f"ds[{row}]", lambda r=row: ds[r]))
        reads.append((f"thumbnail of row {row}", lambda r=row: thumbnail_bytes(stored[r], 128)))
    reads.append(("to_pandas(images='pil')", lambda: ds.to_pandas(images="pil")))
    reads.append(("to_pandas(images='thumbnail')", lambda: ds.to_pandas(images="thumbnail")))
    for label, read in reads:
        tried += 1
        try:
            read()
        except se.StableExploreError:
            refused += 1
            continue
        let_through.append(label)
    return refused, tried, let_through


# --- 4 and 5. the read overhead of batch digests, and fsck MB/s -----------------------------------


def strip_batch_digests(cache_dir: Path, target: Path) -> Path:
    """A copy of a version (shards hard-linked) whose metadata is revision 1: no batch digests, no metadata digest."""
    target.mkdir(parents=True)
    for path in cache_dir.iterdir():  # shards and the small files the metadata lists (content runs...)
        if path.is_file() and path.name != "_metadata.json":
            os.link(path, target / path.name)
    raw = json.loads((cache_dir / "_metadata.json").read_text())
    for key in ("batch_digests", "metadata_digest", "version_id", "name"):
        raw.pop(key, None)
    raw["format_revision"] = 1
    (target / "_metadata.json").write_text(json.dumps(raw))
    return target


def _median(values: list[float]) -> float:
    return statistics.median(values)


def read_overhead(
    root: Path, rows: int, repeats: int, jpegs: list[bytes]
) -> tuple[dict[str, tuple[float, float, float]], Any]:
    """Per read: (with digests, without) median seconds and the ratio of the fastest runs, warm and cold."""
    import stable_explore as se
    from stable_explore.storage.kept import forget

    home = root / "read-home"
    ds = se.build(keyed_rows, our_features(), args=(rows, jpegs), name="reads", home=home, progress=False)
    plain = strip_batch_digests(ds.cache_dir, root / "revision-1" / "reads")
    subjects = {"with": ds.cache_dir, "without": plain}
    rng = np.random.default_rng(1234)
    take_rows = np.sort(rng.choice(rows, 256, replace=False))
    random_10k = rng.choice(rows, min(10_000, rows), replace=False)

    try:
        from stable_explore.widgets._thumbs import ThumbnailCache
        from stable_explore.widgets.browser import ShardBrowser

        def thumbs(handle: Any, page: np.ndarray) -> Any:
            widget = ShardBrowser(handle, page_size=48, cache=ThumbnailCache())
            try:
                return widget._thumbnails(page)
            finally:
                widget.close()
    except ImportError:  # anywidget missing: the same reads and thumbnails without the widget
        from stable_explore.display.images import thumbnail_bytes

        def thumbs(handle: Any, page: np.ndarray) -> Any:
            values = handle.select(page).to_arrow(columns=["image"]).column(0).to_pylist()
            return [thumbnail_bytes(v, 128) for v in values]

    reads: dict[str, Callable[[Any, int], Any]] = {
        "take 256 random rows, decoded": lambda h, k: h.__getitems__((take_rows + k * 7919) % rows),
        "to_pandas 10k contiguous": lambda h, k: h[(k * 10_000) % max(1, rows - 10_000) :][:10_000].to_pandas(),
        "to_pandas 10k random": lambda h, k: h[(random_10k + k * 104_729) % rows].to_pandas(),
        "browser: 64 thumbnails": lambda h, k: thumbs(h, np.arange(64, dtype=np.int64) + (k * 64) % (rows - 64)),
    }
    results: dict[str, tuple[float, float, float]] = {}
    for label, read in reads.items():
        times: dict[str, dict[str, list[float]]] = {s: {"warm": [], "cold": []} for s in subjects}
        handles = {s: se.load(path) for s, path in subjects.items()}
        for s in subjects:  # warm-up: map shards, check the batches the warm reads touch
            read(handles[s], 0)
        for k in range(repeats):
            order = list(subjects.items()) if k % 2 == 0 else list(subjects.items())[::-1]
            for _ in range(WARM_CALLS):  # warm reads are short: more samples, alternating which goes first
                for s, _path in order:
                    started = time.perf_counter()
                    read(handles[s], 0)
                    times[s]["warm"].append(time.perf_counter() - started)
            for s, path in order:
                forget("checked batches", "opened shards")
                fresh = se.load(path)
                started = time.perf_counter()
                read(fresh, k + 1)
                times[s]["cold"].append(time.perf_counter() - started)
        for mode in ("warm", "cold"):
            with_, without = times["with"][mode], times["without"][mode]
            results[f"{label} ({mode})"] = (_median(with_), _median(without), min(with_) / min(without))
    return results, ds


# --- 6 to 9. kills, injected failures, gc racing builds, HTML payloads ------------------------------


def kill_and_fault_trials(root: Path, full: bool) -> None:
    from tests.reliability.faults import OPERATIONS, fault_trial, kill_trial, measure_workload, pristine_home

    pristine = pristine_home(root / "faults")
    scratch = root / "faults-scratch"
    counts, seconds = measure_workload(pristine, scratch)
    kills = 60 if full else 10
    rng = random.Random(12)
    rule(f"6. kills ({kills} SIGKILLs at random moments of build + save + gc, which runs {seconds:.2f} s)")
    started = time.perf_counter()
    survived, lost, mid = 0, [], 0
    for _ in range(kills):
        ok, result = kill_trial(pristine, scratch, rng, seconds)
        survived += ok
        mid += result.get("returncode") == -9 and "counts" not in result  # killed before it finished
        if not ok:
            lost.append(result["problem"])
    print(f"  kills survived {survived} / {kills} ({mid} landed before the workload finished; "
          f"{time.perf_counter() - started:.0f} s)" + (f"; not survived: {lost[:3]}" if lost else ""))  # fmt: skip

    rule("7. injected failures (" + ", ".join(f"{op} x{counts.get(op, 0)}" for op in OPERATIONS) + " calls)")
    started = time.perf_counter()
    totals: Counter[str] = Counter()
    for op in OPERATIONS:
        last = counts.get(op, 0)
        calls = range(1, last + 1) if full else sorted({1, max(1, last // 2), last})
        row: Counter[str] = Counter()
        for mode in ("raise", "crash"):
            for nth in calls:
                ok, result = fault_trial(pristine, scratch, op, nth, mode)
                row["tried"] += 1
                row["survived"] += ok
                if not ok:
                    print(f"    NOT SURVIVED {op} #{nth} {mode}: {result['problem']}")
                if mode == "raise" and not result.get("ok", True) and result.get("returncode") == 0:
                    row["ours" if result.get("ours") else "raw"] += 1
                    if not result.get("ours"):
                        print(f"    raw error {op} #{nth}: {result.get('error')}: {result.get('message')}")
        totals.update(row)
        print(f"  {op:<8} survived {row['survived']:>4} / {row['tried']:<4} errors raised: "
              f"{row['ours']} StableExploreError, {row['raw']} raw")  # fmt: skip
    print(f"  injected failures survived {totals['survived']} / {totals['tried']} (raise and crash modes; "
          f"{totals['ours']} raised as StableExploreError, {totals['raw']} raw; "
          f"{time.perf_counter() - started:.0f} s)")  # fmt: skip


def gc_race_trials(root: Path, full: bool) -> None:
    from tests.reliability.faults import gc_race

    seconds = 20.0 if full else 3.0
    rule(f"8. gc racing builds (two processes, {seconds:.0f} s per keep)")
    import stable_explore as se

    for keep in (0, 1):
        home = root / f"race-{keep}"
        built, collected = gc_race(home, seconds, keep)
        latest = se.load("t", home=home)
        se.verify(latest)
        print(f"  keep={keep}: {built['done']} builds ({built['failed']} failed), {collected['done']} gc runs "
              f"({collected['failed']} failed); latest {latest.version} whole ({len(latest)} rows)")  # fmt: skip
        for failure in [*built["failures"], *collected["failures"]][:3]:  # type: ignore[misc]
            print(f"    {failure}")


def html_trials(root: Path) -> None:
    from tests.reliability.trials import html_payload_trials

    rule("9. HTML payloads (23 payloads x 6 places)")
    escaped, tried, failures = html_payload_trials(root / "html")
    print(f"  HTML payloads escaped {escaped} / {tried}" + (f"; let through: {failures[:5]}" if failures else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="big trial counts and a 200k-row read cache")
    parser.add_argument("--only", choices=["faults", "race", "html"], help="run only these trials (quicker)")
    args = parser.parse_args(argv)
    trials = 330 if args.full else 60
    rows = 200_000 if args.full else 20_000
    repeats = 15 if args.full else 7
    root = Path(tempfile.mkdtemp(prefix="bench-reliability-"))
    import stable_explore as se
    from stable_explore import catalog

    mode = "full" if args.full else "quick"
    print(f"stable-explore reliability benchmark ({mode}); python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    try:
        if args.only is not None:
            {"faults": kill_and_fault_trials, "race": gc_race_trials}.get(args.only, lambda r, f: html_trials(r))(
                root, args.full
            )
            return 0
        jpegs = make_jpegs()
        rule(f"1. corruptions on plain reads ({trials} trials, one flipped bit each)")
        started = time.perf_counter()
        outcomes = corruption_trials(root, trials, jpegs)
        for outcome, count in sorted(outcomes.items()):
            print(f"  {outcome:<12} {count}")
        print(f"  detected on plain reads: {outcomes['refused']} / {trials}; read as the true values: "
              f"{outcomes['unchanged']}; silently wrong: {outcomes['silent']}; segfaults: {outcomes['segfault']} "
              f"({time.perf_counter() - started:.1f} s)")  # fmt: skip
        before = corruption_trials(root, trials, jpegs, digests=False)
        print("  for comparison, the same flips without batch digests (revision 1): "
              f"refused {before['refused']}, silently wrong {before['silent']}, "
              f"unchanged {before['unchanged']}, segfaults {before['segfault']}")  # fmt: skip

        rule("2. traversal attempts")
        refused, tried, through = traversal_trials(root, jpegs)
        print(f"  refused {refused} / {tried}" + (f"; let through: {through}" if through else ""))

        rule("3. image bombs and broken images")
        refused_b, tried_b, through_b = bomb_trials(root, args.full)
        print(f"  refused {refused_b} / {tried_b}" + (f"; let through: {through_b}" if through_b else ""))

        rule(f"4. batch-digest read overhead ({rows:,} rows, medians of {repeats}, same shard files)")
        overhead, ds = read_overhead(root, rows, repeats, jpegs)
        print(f"  {'read':<44} {'digests':>10} {'none':>10} {'ratio':>7} {'best/best':>10}")
        warm_ratios = []
        for label, (with_, without, best) in overhead.items():
            ratio = with_ / without if without else float("nan")
            if "(warm)" in label:
                warm_ratios.append(ratio)
            print(f"  {label:<44} {with_ * 1000:>8.2f}ms {without * 1000:>8.2f}ms {ratio:>6.2f}x {best:>9.2f}x")
        worst = max(warm_ratios)
        verdict = "PASS" if worst <= WARM_TARGET else "MISS"
        print(f"  worst warm ratio {worst:.2f}x (target <= {WARM_TARGET:.2f}x): {verdict}")

        rule("5. fsck")
        report = catalog.fsck(catalog.Catalog(root / "read-home"))
        print(f"  {report.summary()}")
        verify_started = time.perf_counter()
        se.verify(ds)
        verify_seconds = time.perf_counter() - verify_started
        verify_rate = ds.nbytes / 1e6 / verify_seconds
        print(f"  fsck {report.mb_per_s:,.0f} MB/s; verify of the same version {verify_rate:,.0f} MB/s")

        kill_and_fault_trials(root, args.full)
        gc_race_trials(root, args.full)
        html_trials(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
