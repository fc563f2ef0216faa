"""``num_proc=N`` runs on N processes: N - 1 workers of ours and the calling process, which takes runs of rows too.

Before, the caller only waited: with two cores, 8,000 small JPEGs hashed 1.1-1.4x as fast as serially
(``benchmarks/bench_signals.py --only paired``), the pool's start and one idle core eating the gain.
The workers are kept for the next call (:mod:`stable_explore.catalog.parallel.kept_pool`), and a pool
that broke is replaced.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import BrokenExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.catalog.parallel import kept_pool
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


def _fails_at_the_start(values: list[bytes | None], first: int) -> dict[str, np.ndarray]:
    if first == 0:  # the workers take runs from the start
        raise StableExploreError(f"row {first} is bad")
    return {"row": np.arange(first, first + len(values))}


def _kills_its_worker(caller: int, values: list[bytes | None], first: int) -> dict[str, np.ndarray]:
    if os.getpid() != caller:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"row": np.arange(first, first + len(values))}


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _workers(done: dict[str, np.ndarray]) -> set[int]:
    return set(done["pid"].tolist()) - {os.getpid()}


@pytest.fixture(autouse=True)
def no_kept_pool() -> Iterator[None]:
    """Each test starts without a kept pool and leaves none behind."""
    kept_pool.close_kept_pools()
    yield
    kept_pool.close_kept_pools()


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


def test_an_error_in_a_workers_run_reaches_the_caller_and_names_the_row(dataset: se.CachedDataset) -> None:
    with pytest.raises(StableExploreError, match="row 0 is bad"):
        map_images(dataset, "image", _fails_at_the_start, 2)
    again = map_images(dataset, "image", _pid_of_each, 2)  # the pool still serves
    assert again["row"].tolist() == list(range(len(dataset)))


def test_the_next_call_reuses_the_workers_and_they_end_once_idle(
    dataset: se.CachedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _workers(map_images(dataset, "image", _pid_of_each, 2))
    second = _workers(map_images(dataset, "image", _pid_of_each, 2))
    assert len(first) == 1
    assert second == first  # no new worker started
    monkeypatch.setattr(kept_pool, "KEEP_SECONDS", 0.2)
    third = _workers(map_images(dataset, "image", _pid_of_each, 2))
    assert third == first
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in third) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in third), "an idle kept pool's worker still runs"
    fourth = _workers(map_images(dataset, "image", _pid_of_each, 2))
    assert fourth
    assert fourth.isdisjoint(third)  # a new pool


def test_a_worker_killed_mid_call_fails_that_call_and_the_next_gets_a_new_pool(dataset: se.CachedDataset) -> None:
    before = _workers(map_images(dataset, "image", _pid_of_each, 2))
    with pytest.raises(BrokenExecutor):
        map_images(dataset, "image", functools.partial(_kills_its_worker, os.getpid()), 2)
    after = map_images(dataset, "image", _pid_of_each, 2)
    assert after["row"].tolist() == list(range(len(dataset)))
    assert _workers(after)
    assert _workers(after).isdisjoint(before)
