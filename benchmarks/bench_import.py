"""Benchmark: what importing stable-explore costs, and what the magic and the command line pay for it.

Each figure is the median (and range) of N fresh processes (default 7), run one after another:

* ``import stable_explore``: the wall clock of the import statement alone, and ``-X importtime``'s
  cumulative figure for the package;
* for comparison, ``import pyarrow`` alone and ``import datasets`` (Hugging Face) alone;
* the first use of ``se.build`` / ``se.load`` (the modules a build or a load needs, on first use);
* ``%load_ext stable_explore`` in an IPython shell already started (the extension's own cost);
* ``stable-explore --help``, ``stable-explore build --help`` and ``stable-explore ls`` (an empty home, and a
  home of one dataset: listing it reads each version's ``_metadata.json``): the whole process, wall clock,
  beside ``python -c pass`` (the interpreter's own start).

Target (issue 39; informational, the exit status is always 0): ``import stable_explore`` at most
0.25 s (median).

Run::

    python benchmarks/bench_import.py                    # 7 processes per figure
    python benchmarks/bench_import.py --runs 11
    python benchmarks/bench_import.py --root /other/checkout   # the package of another checkout
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ms, rule, verdict

TARGET = 0.25  # seconds, the median of `import stable_explore`
ROOT = Path(__file__).resolve().parents[1]

# each snippet prints the seconds it measured on its last line
TIMED_IMPORT = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
FIRST_USE = (
    "import time, stable_explore as se; t = time.perf_counter(); se.build, se.load; print(time.perf_counter() - t)"
)
LOAD_EXT = """
import time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t = time.perf_counter()
shell.run_line_magic("load_ext", "stable_explore")
print(time.perf_counter() - t)
"""

ONE_DATASET = (
    "import stable_explore as se; "
    "se.build([{'x': i} for i in range(10)], se.Features(x=se.Value('int64')), name='ten', progress=False)"
)


def _environment(root: Path, home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root), "STABLE_EXPLORE_HOME": str(home)}


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run in the empty home: ``python -c`` puts its working folder first on sys.path, before PYTHONPATH."""
    return subprocess.run(argv, env=env, cwd=env["STABLE_EXPLORE_HOME"], capture_output=True, text=True, check=True)


def _timed(code: str, env: dict[str, str]) -> float:
    """Seconds the snippet measured in a fresh process."""
    out = _run([sys.executable, "-c", code], env).stdout
    return float(out.strip().splitlines()[-1])


def _importtime(module: str, env: dict[str, str]) -> float:
    """``-X importtime``'s cumulative seconds for ``module`` in a fresh process."""
    err = _run([sys.executable, "-X", "importtime", "-c", f"import {module}"], env).stderr
    for line in err.splitlines():
        fields = line.split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return int(fields[1]) / 1e6
    msg = f"-X importtime printed no line for {module}"
    raise RuntimeError(msg)


def _wall(argv: list[str], env: dict[str, str]) -> float:
    """Seconds a whole process takes, start to exit."""
    start = time.perf_counter()
    _run(argv, env)
    return time.perf_counter() - start


def _installed(module: str, env: dict[str, str]) -> bool:
    code = f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)"
    return _run([sys.executable, "-c", code], env).stdout.strip() == "True"


def _report(label: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(f"{label:<46} {ms(median):>12}   range {ms(min(seconds))} - {ms(max(seconds))}")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per figure (default 7)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose package is measured")
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory() as home:
        env = _environment(args.root.resolve(), Path(home))
        where = _run([sys.executable, "-c", "import stable_explore; print(stable_explore.__file__)"], env).stdout
        print(f"{runs} fresh processes per figure; python {sys.version.split()[0]}; package {where.strip()}")

        rule("Imports (the import statement alone)")
        package = TIMED_IMPORT.format(module="stable_explore")
        bare = _report("import stable_explore", [_timed(package, env) for _ in range(runs)])
        _report("import stable_explore (-X importtime)", [_importtime("stable_explore", env) for _ in range(runs)])
        _report("import pyarrow", [_timed(TIMED_IMPORT.format(module="pyarrow"), env) for _ in range(runs)])
        if _installed("datasets", env):
            _report(
                "import datasets (Hugging Face)",
                [_timed(TIMED_IMPORT.format(module="datasets"), env) for _ in range(runs)],
            )
        else:
            print("import datasets (Hugging Face)                 not installed")
        _report("first se.build / se.load (after the import)", [_timed(FIRST_USE, env) for _ in range(runs)])

        rule("Entry points")
        if _installed("IPython", env):
            _report("%load_ext stable_explore (shell started)", [_timed(LOAD_EXT, env) for _ in range(runs)])
        _report(
            "python -c pass (the interpreter alone)", [_wall([sys.executable, "-c", "pass"], env) for _ in range(runs)]
        )
        cli = [sys.executable, "-m", "stable_explore.cli"]
        _report("stable-explore --help (whole process)", [_wall([*cli, "--help"], env) for _ in range(runs)])
        _report(
            "stable-explore build --help (whole process)", [_wall([*cli, "build", "--help"], env) for _ in range(runs)]
        )
        _report("stable-explore ls (empty home, whole process)", [_wall([*cli, "ls"], env) for _ in range(runs)])
        with tempfile.TemporaryDirectory() as other:
            full = _environment(args.root.resolve(), Path(other))
            _run([sys.executable, "-c", ONE_DATASET], full)
            _report("stable-explore ls (one dataset, whole process)", [_wall([*cli, "ls"], full) for _ in range(runs)])

        rule("Target")
        print(f"import stable_explore <= {TARGET:.2f} s (median): {ms(bare)}   {verdict(bare <= TARGET)}")


if __name__ == "__main__":
    main()
