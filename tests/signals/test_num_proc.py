"""``num_proc=N`` runs on N processes: N - 1 workers of ours and the calling process, which takes runs of rows too.

Before, the caller only waited: with two cores, 8,000 small JPEGs hashed 1.1-1.4x as fast as serially
(``benchmarks/bench_signals.py --only paired``), the pool's start and one idle core eating the gain.
"""

from __future__ import annotations

import io
import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import StableExploreError
from stable_explore.signals._rows import BATCH_ROWS, map_images


def _jpegs(count: int) -> list[dict[str, bytes]]:
    rng = np.random.default_rng(8)
    rows = []
    for _ in range(count):
        buffer = io.BytesIO()
        PILImage.fromarray(rng.integers(0, 256, (24, 24), dtype=np.uint8)).save(buffer, "JPEG")
        rows.append({"image": buffer.getvalue()})
    return rows


def _pid_of_each(values: list[bytes | None], first: int) -> dict[str, np.ndarray]:
    """Which process handled each row (module level: workers import it)."""
    return {"pid": np.full(len(values), os.getpid(), dtype=np.int64), "row": np.arange(first, first + len(values))}


def _fails_at_the_end(values: list[bytes | None], first: int) -> dict[str, np.ndarray]:
    if first + len(values) >= 6 * BATCH_ROWS:
        raise StableExploreError(f"row {first} is bad")
    return {"row": np.arange(first, first + len(values))}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> se.CachedDataset:
    home: Path = tmp_path_factory.mktemp("home")
    return se.build(_jpegs(6 * BATCH_ROWS), se.Features(image=se.Image()), name="small", home=home, progress=False)


def test_two_processes_share_the_rows_each_once_and_in_order(dataset: se.CachedDataset) -> None:
    done = map_images(dataset, "image", _pid_of_each, 2)
    assert done["row"].tolist() == list(range(len(dataset)))  # every row once, in order
    pids = set(done["pid"].tolist())
    assert os.getpid() in pids  # this process took runs of rows
    assert len(pids) == 2  # and one worker the rest


def test_progress_counts_every_row_once_and_the_result_equals_the_serial_one(dataset: se.CachedDataset) -> None:
    seen: list[tuple[int, int]] = []
    serial = signals.perceptual_hashes(dataset, cache=False, progress=False)
    shared = signals.perceptual_hashes(
        dataset, num_proc=2, cache=False, progress=False, on_progress=lambda done, total: seen.append((done, total))
    )
    assert shared.equals(serial)
    assert seen[-1] == (len(dataset), len(dataset))
    assert all(b[0] > a[0] for a, b in itertools.pairwise(seen))


def test_an_error_in_the_callers_runs_stops_the_workers_and_names_the_row(dataset: se.CachedDataset) -> None:
    with pytest.raises(StableExploreError, match="row 5120 is bad"):
        map_images(dataset, "image", _fails_at_the_end, 2)
