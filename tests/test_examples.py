"""The README's main job works: the demo script runs end to end (the notebooks run in test_notebooks.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
