"""The catalog: names -> versions under one home, resolving refs by tag and prefix, a home that moved."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import CacheNotFoundError
from tests.sources import NUM_FEATURES, numbers


def test_moved_home_still_loads_and_verifies(tmp_path: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(20,), home=tmp_path / "one", progress=False)
    shutil.move(str(tmp_path / "one"), str(tmp_path / "two"))
    moved = se.load("numbers", home=tmp_path / "two")
    assert moved.version == ds.version
    assert moved[19]["x"] == 19
    assert se.verify(moved).num_rows == 20


def test_load_by_name_prefix_tag_and_path(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False, tag="small")
    b = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    assert se.load("numbers", home=home).version == b.version
    assert se.load("numbers@small", home=home).version == a.version
    assert se.load(f"numbers@{a.version[:5]}", home=home).version == a.version
    by_path = se.load(a.cache_dir)
    assert (by_path.name, by_path.version, len(by_path)) == ("numbers", a.version, 3)
    assert se.load(str(a.cache_dir)).version == a.version


def test_unknown_and_ambiguous_refs_list_what_exists(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False, tag="small")
    with pytest.raises(CacheNotFoundError, match=r"no dataset named 'nope'.*\['numbers'\]"):
        se.load("nope", home=home)
    with pytest.raises(CacheNotFoundError, match=rf"no version or tag 'zzz'.*{a.version}.*small"):
        se.load("numbers@zzz", home=home)
    for n in range(4, 40):
        se.build(numbers, NUM_FEATURES, args=(n,), home=home, progress=False)
    ids = [row["version"] for row in se.versions("numbers", home=home)]
    prefix = next(p for p in "0123456789abcdef" if sum(v.startswith(p) for v in ids) > 1)
    with pytest.raises(CacheNotFoundError, match="ambiguous"):
        se.load(f"numbers@{prefix}", home=home)
