"""Every pool of ours ends with the process that started it: ``ds.map(num_proc=)`` and a signal's ``num_proc=``.

Before, only a parallel build's workers watched their owner (tests/catalog/test_parallel.py kills one):
a ``ds.map(num_proc=2)`` whose process was SIGKILLed left 4 processes running 120 s later (two workers,
the fork server, the resource tracker), and so did ``image_stats(num_proc=2)``. Here a real child process
runs the call and is SIGKILLed while its workers work; every process it started must be gone within 15 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

MAP = """
import time, stable_explore as se
ds = se.build([{{"x": i}} for i in range(400)], se.Features(x=se.Value("int64")), name="d", home={home!r},
              progress=False)

def slow(row):
    time.sleep(0.5)
    return {{"y": row["x"] * 2}}

ds.map(slow, num_proc=2, batch_size=10, progress=False)
"""

SIGNAL = """
import io
import numpy as np
from PIL import Image
import stable_explore as se
from stable_explore.signals import image_stats
# a smooth 1024 px photo-like JPEG (~110 KB): seconds of decoding for the workers, little to write first
y, x = np.mgrid[0:1024, 0:1024]
wave = (np.sin(x / 17.0) * 60 + np.cos(y / 23.0) * 60 + 128)[..., None]
pixels = np.clip(wave + np.random.default_rng(0).normal(0, 6, (1024, 1024, 3)), 0, 255).astype(np.uint8)
buffer = io.BytesIO()
Image.fromarray(pixels).save(buffer, "JPEG")
rows = ({{"image": buffer.getvalue()}} for _ in range(3000))
ds = se.build(rows, se.Features(image=se.Image()), name="d", home={home!r}, progress=False)
image_stats(ds, num_proc=3)  # this process takes part: two workers
"""


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("script", [MAP, SIGNAL], ids=["map", "image_stats"])
def test_killing_the_process_of_a_pool_ends_its_workers(script: str, tmp_path: Path) -> None:
    code = textwrap.dedent(script.format(home=str(tmp_path / "home")))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=str(ROOT))
    parent = psutil.Process(child.pid)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the workers fork from the fork server: the child is not their parent
        descendants = parent.children(recursive=True)
        workers = [p for p in descendants if _running(p) and p.ppid() != child.pid]
        if len(workers) >= 2:
            break
        assert child.poll() is None, "the call ended before its workers were seen"
        time.sleep(0.1)
    else:
        child.kill()
        pytest.fail(f"the pool did not start its workers: {parent.children(recursive=True)}")
    time.sleep(1.0)  # the workers are in the user's function (or the images) now
    descendants = parent.children(recursive=True)
    assert child.poll() is None, "the call must still be running when it is killed"
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 15
    alive = [p for p in descendants if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in alive if _running(p)]
    for leftover in alive:
        leftover.kill()
    assert alive == [], f"still running 15 s after the pool's process was killed: {alive}"
