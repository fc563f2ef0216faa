"""Run the test suite (or part of it) several times beside busy loops, to find tests that fail only under load.

CI runs pytest on two cores with mypy beside it; a test that waits on a thread, a process, a port or a
clock may pass on a calm machine and fail there, once in many runs. This runs pytest as CI does
(``-n 2 --dist loadfile``) while ``--hogs`` processes spin on the same cores, ``--runs`` times, and prints
each test that failed with how often. A run ends early on Ctrl-C; the busy loops are stopped either way.

Usage::

    python benchmarks/soak_tests_under_load.py --hogs 2 --runs 3 --ignore tests/widgets
    python benchmarks/soak_tests_under_load.py --hogs 4 --runs 2 tests/widgets tests/test_notebooks.py
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)")


def _busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _run_pytest(paths: list[str], ignore: list[str], workers: int) -> tuple[int, list[str], float]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "-n", str(workers)]
    command += ["--dist", "loadfile", *(f"--ignore={path}" for path in ignore), *paths]
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    failed = [match[2] for line in result.stdout.splitlines() if (match := _FAILED.match(line))]
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-300:]
    print(f"  {summary}", flush=True)
    return result.returncode, failed, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=[], help="what pytest runs (default: its testpaths, as CI)")
    parser.add_argument("--hogs", type=int, default=2, help="busy loops beside pytest (default 2)")
    parser.add_argument("--runs", type=int, default=3, help="runs of pytest (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers, as CI (default 2)")
    parser.add_argument("--ignore", action="append", default=[], help="a path pytest leaves out (repeatable)")
    args = parser.parse_args()
    failures: collections.Counter[str] = collections.Counter()
    seconds: list[float] = []
    runs = 0
    loops = _busy_loops(args.hogs)
    try:
        for run in range(1, args.runs + 1):
            print(f"run {run} of {args.runs}, {args.hogs} busy loops, load {os.getloadavg()[0]:.1f}", flush=True)
            status, failed, took = _run_pytest(args.paths, args.ignore, args.workers)
            if status != 0 and not failed:  # a crash, an interrupt, nothing collected (5): a failed run all the same
                failed = [f"(pytest exited with {status}, naming no test)"]
            failures.update(failed)
            seconds.append(took)
            runs += 1
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    if seconds:
        print(f"{runs} runs, {min(seconds):.0f}-{max(seconds):.0f} s each")
    if not failures:
        print("no test failed")
        return 0
    print("failed (runs failed / runs):")
    for test, count in failures.most_common():
        print(f"  {count}/{runs}  {test}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
