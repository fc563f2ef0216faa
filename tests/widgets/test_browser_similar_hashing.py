"""The first "similar rows" of a dataset without an embedding: hashed on a thread, followed, cancellable, kept.

Before, the click held the kernel while every image was hashed (no sign of work, the button still
enabled), and a new kernel hashed again. Now the page's request starts the hashing on a thread and
answers at once; ``similar_progress`` follows the rows hashed; Cancel stops it with nothing kept; a
finished hashing is kept in the home, so a later browser (a new kernel's) answers at once.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.signals.cache import COUNTS, SIGNALS_DIR
from tests.widgets.commands import invoke

# the module, not the function the package exports under the same name
similarity_module = importlib.import_module("stable_explore.signals.similarity")
ROWS = 2600  # three batches of 1,024: progress is seen between them


@pytest.fixture
def noise(tmp_path: Path) -> se.CachedDataset:
    rng = np.random.default_rng(0)
    rows = [{"image": rng.integers(0, 256, size=(24, 24), dtype=np.uint8)} for _ in range(ROWS)]
    return se.build(rows, se.Features(image=se.Image()), name="noise", home=tmp_path / "home", progress=False)


def _signal_files(ds: se.CachedDataset) -> list[Path]:
    assert ds.home is not None
    folder = Path(str(ds.home)) / "noise" / SIGNALS_DIR
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_the_first_click_hashes_on_a_thread_with_progress_and_the_next_is_at_once(noise: se.CachedDataset) -> None:
    similarity_module._KEPT.clear()
    browser = noise.browse(page_size=24)
    seen: list[dict[str, object]] = []
    browser.observe(lambda change: seen.append(dict(change["new"])), names="similar_progress")

    reply, _ = invoke(browser, "similar", {"row": 7})
    assert reply == {"type": "hashing"}  # answered at once: the kernel is free meanwhile
    browser.wait_similar(timeout=120)
    running = [p["done"] for p in seen if p["state"] == "running"]
    assert running[0] == 0
    assert running[1:] == [1024, 2048, ROWS]  # rows hashed, batch by batch, of the total
    assert all(p["total"] == ROWS for p in seen)
    assert seen[-1]["state"] == "done"
    assert len(_signal_files(noise)) == 1  # kept as a signal of the version

    reply, _ = invoke(browser, "similar", {"row": 7})
    assert reply == {"type": "ok"}  # the second click: no hashing
    assert browser.page_rows()[0] == 7
    assert browser.num_rows == 9

    # a new kernel (nothing in memory) reads the kept hashes instead of hashing again
    similarity_module._KEPT.clear()
    before = COUNTS.copy()
    again = se.load("noise", home=noise.home).browse(page_size=24)
    assert again.start_similar(7)
    again.wait_similar(timeout=60)
    assert COUNTS["read"] == before["read"] + 1
    assert COUNTS["written"] == before["written"]
    assert invoke(again, "similar", {"row": 7})[0] == {"type": "ok"}
    assert again.page_rows().tolist() == browser.page_rows().tolist()


def test_cancel_stops_the_hashing_and_keeps_nothing(noise: se.CachedDataset) -> None:
    similarity_module._KEPT.clear()
    browser = noise.browse(page_size=24)
    assert invoke(browser, "similar", {"row": 3})[0] == {"type": "hashing"}
    assert invoke(browser, "similar_cancel")[0] == {"type": "ok"}  # before the first batch of 1,024 ends
    browser.wait_similar(timeout=60)
    progress = browser.similar_progress
    assert progress["state"] == "cancelled"
    assert progress["done"] < ROWS
    assert browser.status.startswith("similar rows: hashing cancelled at ")
    assert _signal_files(noise) == []  # nothing half-kept in the home
    assert browser.subset == ""  # the grid unchanged
    # and nothing in memory: the next click hashes again, to the end
    assert invoke(browser, "similar", {"row": 3})[0] == {"type": "hashing"}
    browser.wait_similar(timeout=120)
    assert browser.similar_progress["state"] == "done"
    assert invoke(browser, "similar", {"row": 3})[0] == {"type": "ok"}
