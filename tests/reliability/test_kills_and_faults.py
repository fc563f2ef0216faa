"""Issue 12: SIGKILLs at random moments and injected I/O failures (raise and crash modes) in a real child
running build, save and gc: the catalog always holds the old or the new state, and gc + fsck leave it clean.

This is the bounded CI version; ``benchmarks/bench_reliability.py --full`` runs every call of every
operation in both modes and 60 kills.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.reliability.faults import (
    OPERATIONS,
    count_operations,
    fault_trial,
    kill_trial,
    measure_workload,
    pristine_home,
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pristine_home(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def counts(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    return count_operations(pristine, tmp_path_factory.mktemp("count") / "home")


def test_the_workload_makes_every_kind_of_call(counts: dict[str, int]) -> None:
    assert all(counts.get(op, 0) > 0 for op in OPERATIONS), counts


@pytest.mark.parametrize("op", OPERATIONS)
def test_a_failure_of_the_first_middle_or_last_call_leaves_a_whole_catalog(
    pristine: Path, counts: dict[str, int], op: str, tmp_path: Path
) -> None:
    last = counts[op]
    for nth, mode in ((1, "crash"), (max(1, last // 2), "raise"), (last, "crash")):
        survived, result = fault_trial(pristine, tmp_path / "home", op, nth, mode)
        assert survived, (op, nth, mode, result)
        if mode == "raise" and not result["ok"]:
            assert result["ours"], result  # a failed write is a StableExploreError naming the file, not a raw one


def test_random_kills_leave_a_whole_catalog(pristine: Path, tmp_path: Path) -> None:
    rng = random.Random(2026)
    _, seconds = measure_workload(pristine, tmp_path / "home")
    for _ in range(4):
        survived, result = kill_trial(pristine, tmp_path / "home", rng, seconds)
        assert survived, result
