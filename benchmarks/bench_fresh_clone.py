"""From a fresh clone to a painted browser, following the README as a newcomer would.

Steps, each timed on the wall clock:

1. ``git clone`` of this repository's committed HEAD into a temporary folder;
2. a new virtual environment with nothing in it (no ``--system-site-packages``), and the README's first
   command: ``pip install -e '.[lab]'`` (from the machine's package registry), then ``python notebooks/demo.py``;
3. JupyterLab from that environment serving ``notebooks/``, ``01_quickstart.ipynb`` opened in headless
   Chromium, "run all", until the browser's first page of thumbnails is painted (``data-ready='page-0'``).

Run: ``python benchmarks/bench_fresh_clone.py`` (needs Playwright and ``/usr/bin/chromium`` in the running
Python, as the browser tests do; pip's download cache makes a second run faster: ``--no-cache`` measures
the first install a new machine sees).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "pip install -e '.[lab]'"
sys.path.insert(0, str(ROOT))

from tests.lab import CHROMIUM, CHROMIUM_ARGS, jupyter_lab, open_notebook, run_all  # noqa: E402


def _timed(label: str, command: list[str], cwd: Path, times: dict[str, float]) -> None:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times[label] = time.perf_counter() - started
    print(f"  {label:<34} {times[label]:7.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-cache", action="store_true", help="pip without its download/wheel cache")
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fresh-clone-") as scratch:
        root = Path(scratch)
        clone = root / "stable-explore"
        venv = root / "venv"
        python = str(venv / "bin" / "python")
        print("fresh clone -> painted browser (README's first command, then 01_quickstart in JupyterLab)")
        started = time.perf_counter()
        _timed("git clone", ["git", "clone", "-q", str(ROOT), str(clone)], root, times)
        _timed("python -m venv", [sys.executable, "-m", "venv", str(venv)], root, times)
        pip = [python, "-m", "pip", "install", "-q", "-e", ".[lab]"] + (["--no-cache-dir"] if options.no_cache else [])
        _timed(INSTALL, pip, clone, times)
        _timed("python notebooks/demo.py", [python, "notebooks/demo.py"], clone, times)
        lab_started = time.perf_counter()
        env = {"STABLE_EXPLORE_HOME": str(root / "home")}
        with (
            jupyter_lab(root / "lab", clone / "notebooks", env, python=python) as url,
            sync_playwright() as playwright,
        ):
            times["jupyter lab started"] = time.perf_counter() - lab_started
            print(f"  {'jupyter lab started':<34} {times['jupyter lab started']:7.1f} s", flush=True)
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                opened = time.perf_counter()
                open_notebook(page, url, "01_quickstart.ipynb")
                run_all(page)
                page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=300_000)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                times["notebook opened -> browser painted"] = time.perf_counter() - opened
                print(f"  {'notebook opened -> browser painted':<34} {times[list(times)[-1]]:7.1f} s", flush=True)
            finally:
                browser.close()
        total = time.perf_counter() - started
    print(f"  {'total: clone -> painted browser':<34} {total:7.1f} s")
    print(f"  (of which the install {times[INSTALL]:.1f} s)")


if __name__ == "__main__":
    main()
