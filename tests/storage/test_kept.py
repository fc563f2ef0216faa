"""One place for every cache of opened files and parsed sidecars: each listed with its bounds, one forget."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from stable_explore.schema import ClassLabel, Features, Value
from stable_explore.storage.kept import CacheStats, Kept, forget, kept, kept_each, stats

FEATURES = Features(x=Value("int64"), label=ClassLabel(names=["a", "b"]))

SHARED = {
    "checked batches",
    "opened shards",
    "parsed cell patches",
    "sealed metadata",
    "shard maps",
    "validated shards",
    "verify row columns",
}
EACH = {"reader open shards", "remote file blocks", "remote decoded batches"}


def rows():
    for i in range(3000):
        yield {"x": i, "label": i % 2}


def _by_name() -> dict[str, CacheStats]:
    return {s.name: s for s in stats()}


def _loaded(home: Path) -> se.CachedDataset:
    se.build(rows, FEATURES, name="k", home=home, progress=False, batch_size=500)
    forget()
    ds = se.load("k", home=home)
    ds.relabel({0: 1, 1: 0}).save()  # cell patches and a second sealed version
    loaded = se.load("k", home=home)
    assert loaded.to_pandas()["x"].tolist() == list(range(3000))
    return loaded


def test_every_cache_is_listed_with_its_bounds(tmp_path: Path) -> None:
    ds = _loaded(tmp_path / "home")
    found = _by_name()
    assert set(found) >= SHARED
    assert {name for name in found if found[name].scope == "process"} >= SHARED
    assert (found["opened shards"].max_entries, found["opened shards"].max_bytes) == (64, 256 * 1024 * 1024)
    assert found["shard maps"].max_entries == 16
    for name in ("opened shards", "sealed metadata", "checked batches", "parsed cell patches"):
        assert found[name].entries > 0, name
    assert found["checked batches"].bytes > 0  # one flag per batch and column checked
    reader = found["reader open shards"]
    assert reader.scope == "each"
    assert reader.holders >= 1
    assert reader.entries >= 1
    assert len(ds) == 3000


def test_gc_forgets_what_holds_files_and_keeps_the_parsed_sidecars(tmp_path: Path) -> None:
    _loaded(tmp_path / "home")
    forget(holding_files=True)
    found = _by_name()
    for name in ("opened shards", "shard maps", "verify row columns"):
        assert found[name].entries == 0, name
    assert found["sealed metadata"].entries > 0
    assert found["checked batches"].entries > 0


def test_forget_empties_every_shared_cache_and_a_named_one_alone(tmp_path: Path) -> None:
    _loaded(tmp_path / "home")
    forget("sealed metadata")
    found = _by_name()
    assert found["sealed metadata"].entries == 0
    assert found["opened shards"].entries > 0
    forget()
    assert all(s.entries == 0 for s in stats() if s.scope == "process")


def test_a_name_that_is_no_cache_is_refused_naming_the_caches() -> None:
    with pytest.raises(InvalidOptionError, match=r"'shard map'.*'shard maps'"):
        forget("shard map")


def test_a_cache_each_object_holds_goes_with_its_object() -> None:
    before = _by_name().get("test objects")
    assert before is None
    held = [kept_each("test objects", 3) for _ in range(2)]
    held[0].put(1, "a")
    held[1].put(1, "b")
    held[1].put(2, "c")
    found = _by_name()["test objects"]
    assert (found.holders, found.entries, found.max_entries) == (2, 3, 3)
    forget()  # not a shared cache: its object may be reading from it
    assert len(held[1]) == 2
    del held
    gc.collect()
    assert _by_name()["test objects"].holders == 0
    with pytest.raises(InvalidOptionError, match="each object holds"):
        kept("test objects", 3)


def test_a_cache_is_bounded_in_bytes_as_entries_come_and_go() -> None:
    cache: Kept[str, bytes] = Kept(10, weight=len, max_weight=100)
    cache.put("a", b"x" * 60)
    cache.put("b", b"x" * 30)
    assert (len(cache), cache.nbytes) == (2, 90)
    cache.put("a", b"x" * 10)  # replaced: its old size no longer counts
    assert (len(cache), cache.nbytes) == (2, 40)
    cache.put("c", b"x" * 70)  # 110 bytes: the least recently used goes
    assert ("b" in cache, "a" in cache, cache.nbytes) == (False, True, 80)
    assert cache.setdefault("a", b"other") == b"x" * 10
    cache.clear()
    assert (len(cache), cache.nbytes) == (0, 0)
