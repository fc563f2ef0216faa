"""Refs move by compare-and-swap through the store: a writer that lost the race is told so and changes nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.catalog import Catalog


def test_only_one_of_two_racing_moves_of_a_ref_wins(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"))
    a = se.build([{"x": 1}], features, name="r", home=tmp_path, progress=False)
    b = se.build([{"x": 2}], features, name="r", home=tmp_path, progress=False)
    c = se.build([{"x": 3}], features, name="r", home=tmp_path, progress=False)
    catalog = Catalog(tmp_path)
    catalog.write_ref("r", "best", a.version)
    results: dict[str, bool] = {}
    barrier = threading.Barrier(2)

    def move(to: str) -> None:
        barrier.wait()
        results[to] = catalog.swap_ref("r", "best", a.version, to)

    threads = [threading.Thread(target=move, args=(v.version,)) for v in (b, c)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results.values()) == [False, True]
    winner = next(v for v, won in results.items() if won)
    assert catalog.read_ref("r", "best") == winner
    assert se.load("r@best", home=tmp_path).version == winner


def test_a_ref_cannot_point_at_a_missing_version_or_escape_the_home(tmp_path: Path) -> None:
    se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="r", home=tmp_path, progress=False)
    catalog = Catalog(tmp_path)
    with pytest.raises(se.CacheNotFoundError, match="r@0000000000000000 does not exist"):
        catalog.write_ref("r", "best", "0000000000000000")
    with pytest.raises(se.InvalidNameError):
        catalog.write_ref("r", "../../outside", catalog.read_ref("r", "latest") or "")
    assert sorted(catalog.refs("r")) == ["latest"]


def test_a_ref_with_nothing_after_the_at_sign_is_refused_not_taken_for_the_latest(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=tmp_path, progress=False)
    tag = ""  # as f"n@{tag}" makes it when a variable is empty
    for call in (lambda: se.load(f"n@{tag}", home=tmp_path), lambda: se.compare(ds, f"n@{tag}", home=tmp_path)):
        with pytest.raises(se.InvalidNameError, match=r"nothing after '@' in 'n@'.*n@clean.*'n' for the latest"):
            call()
    assert se.load("n", home=tmp_path).version == ds.version
