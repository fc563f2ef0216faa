"""gc: untagged versions beyond the newest go, tagged ones never, and leftovers of dead saves."""

from __future__ import annotations

import os
from pathlib import Path

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers


def test_gc_frees_untagged_versions_and_never_tagged_ones(home: Path) -> None:
    kept = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False, tag="keep")
    doomed = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    latest = se.build(numbers, NUM_FEATURES, args=(100,), home=home, progress=False)
    freed = se.gc(home=home, keep=0)
    assert freed >= doomed.nbytes
    remaining = {row["version"] for row in se.versions("numbers", home=home)}
    assert remaining == {kept.version, latest.version}
    assert se.gc(home=home, keep=0) == 0
    # the source index no longer points at the deleted version: building it again works
    again = se.build(numbers, NUM_FEATURES, args=(200,), home=home, progress=False)
    assert again.build_info.startswith("rebuilt")
    assert len(again) == 200


def test_gc_counts_only_bytes_it_frees_from_an_interrupted_save(home: Path) -> None:
    import socket

    ds = se.build(numbers, NUM_FEATURES, args=(300,), home=home, progress=False)
    versions = home / "numbers" / "versions"
    stale = versions / f".staging.tmp-{socket.gethostname()}-999999-dead"
    stale.mkdir()
    (stale / "new.arrow").write_bytes(b"x" * 1000)
    os.link(ds.cache_dir / "shard-00000.arrow", stale / "linked.arrow")  # still the parent's
    freed = se.gc(home=home)
    assert freed == 1000
    assert not stale.exists()
    assert se.verify(ds).num_rows == 300
