"""The README's main job works: the demo script and the quickstart notebook run end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_demo_runs_twice_and_the_second_run_is_a_hit(tmp_path: Path) -> None:
    env = {**os.environ, "STABLE_EXPLORE_HOME": str(tmp_path / "home")}
    command = [sys.executable, str(NOTEBOOKS / "demo.py")]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "built: first build of digits" in first.stdout
    assert "second call: reused: same source, arguments and features" in first.stdout
    assert "+0 -2 ~1 rows; label: seven->one x1" in first.stdout
    assert "digests match" in first.stdout
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "reused: same source, arguments and features" in second.stdout.splitlines()[1]


def test_quickstart_notebook_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "home"))
    notebook = nbformat.read(NOTEBOOKS / "01_quickstart.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]

    def text(cell: object) -> str:
        return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")  # type: ignore[attr-defined]

    assert "built: first build of digits" in text(code[2])
    assert "reused: same source, arguments and features" in text(code[3])
    widget = next(o for o in code[4].outputs if o.output_type == "execute_result")
    assert "application/vnd.jupyter.widget-view+json" in widget["data"]
    assert "text/html" in widget["data"]  # the static card, for viewers without a kernel
    assert "saved: drop 2, relabel 1" in text(code[5])
    assert "+0 -2 ~1 rows; label: seven->one x1" in text(code[6])
    assert "digests match" in str(code[8].outputs[0]["data"]["text/plain"])
