"""Benchmark: peak memory of a build as the number of rows grows (issue 12, "Scale").

Each build runs in a fresh subprocess: ``se.build`` of N tiny rows (``{"x": i}``, int64, keyed by
row index, or by ``f"k{i}"`` strings with ``--string-keys``) into a temp home, with the default shard
size and batch size and no progress bar. The child reports:

* its RSS just before the build (after imports and a 1,000-row warm-up build), from ``/proc/self/status``;
* its peak RSS over the whole run (Linux ``VmHWM``, reset through ``/proc/self/clear_refs`` just before
  the build where the kernel allows it; else ``resource.getrusage(RUSAGE_SELF).ru_maxrss``);
* the build's wall time and rows/s.

Growth = peak - before. Target: the growth at the largest N is within 32 MB of the growth at the
smallest (1M and 10M rows by default): memory must not grow with the number of rows. Duplicate keys
are still refused; ``--check-duplicates`` also builds N rows whose last key repeats the first and
checks that ``DuplicateKeyError`` names both rows.

Run::

    python benchmarks/bench_scale.py                       # 1M and 10M rows (a few minutes on 2 cores)
    python benchmarks/bench_scale.py --rows 100000 1000000 # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import MB, rule, verdict

ROOT = Path(__file__).resolve().parents[1]
TARGET_MB = 32

CHILD = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path
import stable_explore as se

rows, string_keys, duplicate = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1"
features = se.Features(x=se.Value("int64"))

def tiny(n, repeat_first=False):
    if string_keys:
        for i in range(n):
            yield f"k{i}", {"x": i}
    else:
        for i in range(n):
            yield i, {"x": i}
    if repeat_first:
        yield (("k0" if string_keys else 0), {"x": -1})

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None

home = tempfile.mkdtemp(prefix="bench-scale-")
se.build(tiny, features, name="warm", args=(1000,), home=home, progress=False, force=True)
reset = False
try:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    reset = True
except OSError:
    pass
before = status("VmRSS") or 0
started = time.perf_counter()
outcome = "built"
try:
    ds = se.build(tiny, features, name="tiny", args=(rows, duplicate), home=home, progress=False, force=True)
    assert len(ds) == rows
except se.DuplicateKeyError as exc:
    outcome = f"refused: {exc}"
seconds = time.perf_counter() - started
peak = status("VmHWM") if reset else None
if peak is None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": rows, "before": before, "peak": peak, "seconds": seconds, "outcome": outcome,
                  "hwm_reset": reset}))
"""


def run(rows: int, string_keys: bool, duplicate: bool = False) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        env["TMPDIR"] = tmp
        args = [sys.executable, "-c", CHILD, str(rows), "1" if string_keys else "0", "1" if duplicate else "0"]
        child = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise SystemExit(f"the build of {rows:,} rows failed:\n{child.stderr[-3000:]}")
    result: dict[str, object] = json.loads(child.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--string-keys", action="store_true", help="keys f'k{i}' instead of row numbers")
    parser.add_argument("--check-duplicates", action="store_true", help="also check a repeated key is refused")
    args = parser.parse_args(argv)
    kind = "string keys" if args.string_keys else "int keys"
    print(f"stable-explore scale benchmark ({kind}); python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    rule("peak memory of a build of N tiny rows (each in a fresh process)")
    growth: dict[int, float] = {}
    for rows in args.rows:
        result = run(rows, args.string_keys)
        before, peak, seconds = int(result["before"]), int(result["peak"]), float(result["seconds"])  # type: ignore[arg-type]
        growth[rows] = (peak - before) / MB
        print(
            f"  {rows:>12,} rows: before {before / MB:7.1f} MB, peak {peak / MB:7.1f} MB, "
            f"growth {growth[rows]:6.1f} MB, {seconds:6.1f} s ({rows / seconds:,.0f} rows/s)"
            + ("" if result["hwm_reset"] else " [peak from ru_maxrss: includes the warm-up]")
        )
    smallest, largest = min(growth), max(growth)
    delta = growth[largest] - growth[smallest]
    print(
        f"  growth at {largest:,} - growth at {smallest:,} rows: {delta:+.1f} MB "
        f"(target <= {TARGET_MB} MB): {verdict(delta <= TARGET_MB)}"
    )
    if args.check_duplicates:
        rule("a repeated key is still refused")
        rows = max(args.rows)
        result = run(rows, args.string_keys, duplicate=True)
        print(f"  {rows:,} rows + a repeat of the first key: {result['outcome']}")
        print(f"  peak {int(result['peak']) / MB:.1f} MB (before {int(result['before']) / MB:.1f} MB)")  # type: ignore[call-overload]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
