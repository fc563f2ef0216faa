"""Issue 12 #1: gc and builds in two real processes: gc never deletes what a ref points at (or a version a
build was just handed), and a reader whose version gc deleted gets a clear error, not "shard file is missing".
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog import Catalog, collect_garbage
from tests.reliability.faults import gc_race
from tests.sources import NUM_FEATURES, numbers


@pytest.mark.parametrize("keep", [0, 1])
def test_builds_and_gc_in_two_processes_never_lose_what_latest_points_at(home: Path, keep: int) -> None:
    built, collected = gc_race(home, 3.0, keep, rounds=6)
    assert built["failed"] == 0, built["failures"]
    assert collected["failed"] == 0, collected["failures"]
    assert built["done"] >= 4
    assert collected["done"] >= 4
    latest = se.load("t", home=home)  # latest always points at a whole version
    assert len(latest) in (10, 20)
    assert se.verify(latest).num_rows == len(latest)
    report = se.fsck(home=home)
    assert not [p for p in report.problems if "ref points" in str(p)], report


def test_gc_leaves_a_version_a_build_was_just_handed(home: Path) -> None:
    first = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 3}, home=home, progress=False)
    se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 4}, home=home, progress=False)  # latest moves on
    hit = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 3}, home=home, progress=False)
    assert hit.build_info.startswith("reused")
    assert hit.version == first.version
    assert se.gc("t", keep=0, home=home).removed == []  # reused just now: a builder may be opening it
    assert len(hit) == 3
    assert hit[2]["x"] == 2
    assert collect_garbage(Catalog(home), "t", keep=0, grace=0).removed == [f"t@{first.version}"]


def test_a_reader_whose_version_gc_deleted_is_told_so(home: Path) -> None:
    old = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 3}, home=home, progress=False)
    reader = se.load(f"t@{old.version}", home=home)  # opened, its shards not mapped yet
    se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 4}, home=home, progress=False)
    assert collect_garbage(Catalog(home), "t", keep=0).removed == [f"t@{old.version}"]
    with pytest.raises(se.CacheNotFoundError) as caught:
        reader[0]
    message = str(caught.value)
    assert old.version in message
    assert "garbage-collected" in message
    assert "shard file is missing" not in message


def test_gc_and_publish_share_the_refs_lock(home: Path) -> None:
    """While gc holds the dataset's refs lock, a publish waits for it (and gc never sees a half-moved ref)."""
    import threading

    se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 3}, home=home, progress=False)
    catalog = Catalog(home)
    order: list[str] = []
    with catalog.refs_lock("t"):
        worker = threading.Thread(
            target=lambda: order.append(
                se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 6}, home=home, progress=False).version
            )
        )
        worker.start()
        time.sleep(0.5)
        order.append("gc done")
        assert worker.is_alive()  # the publish waits for the lock
    worker.join(30)
    assert order[0] == "gc done"
    assert catalog.read_ref("t", "latest") == order[1]
