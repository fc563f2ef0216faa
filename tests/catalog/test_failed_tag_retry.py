"""A build whose tag (or source record) failed to move: the retry publishes, moves the tag and latest.

Before, the source record was written before the refs moved: the failed call left a version that
no ref named, the retry found it as "reused" (a hit moves no ref) and returned it, while
``se.load(name)`` still opened the old version. The failure is an ``EIO`` injected into
``os.replace`` for one target on a local home (as a failing disk gives it), and a failed ``PUT``
of the tag's object on the bucket (as a server that refuses it gives it); everything else runs on
real files and a real S3 server.
"""

from __future__ import annotations

import errno
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore.catalog import Catalog, StoreCatalog, failure_note_of
from stable_explore.catalog.names import open_store
from stable_explore.errors import CacheWriteError, RemoteStoreError
from stable_explore.storage.backends.object import ObjectStore

FEATURES = se.Features(x=se.Value("int64"))
CALLS: list[int] = []


def counted(n: int) -> Iterator[dict[str, int]]:
    """A generator function (fingerprinted: a rebuild of the same ``n`` is a cache hit) that counts its runs."""
    CALLS.append(n)
    for i in range(n):
        yield {"x": i}


def _build(home: Path | str, n: int, **options: Any) -> se.CachedDataset:
    return se.build(counted, FEATURES, name="d", home=home, args=(n,), progress=False, ignore="CALLS", **options)


def _fail_replacing(monkeypatch: pytest.MonkeyPatch, failing: Callable[[str], bool]) -> None:
    real = os.replace

    def replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if failing(os.fspath(target)):
            raise OSError(errno.EIO, "injected I/O error", os.fspath(target))
        real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize("failing", ["/d/refs/x", "/d/sources/", "/d/refs/latest"])
def test_a_build_retried_after_its_refs_failed_to_move_moves_the_tag_and_latest(
    home: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    first = _build(home, 3)
    _fail_replacing(monkeypatch, lambda target: failing in target)
    with pytest.raises(CacheWriteError) as raised:
        _build(home, 4, tag="x")
    monkeypatch.undo()
    catalog = Catalog(home)
    assert catalog.read_ref("d", "latest") == first.version, "the failed call moved no ref but (at most) the tag"
    left = set(catalog.version_ids("d")) - {first.version}
    assert len(left) == 1, "the version written stays in place for the retry"
    (written,) = left
    note = failure_note_of(raised.value)
    assert note is not None
    assert f"d@{written} was written but latest was not moved to it" in note, note
    assert "nothing was saved" not in str(raised.value.__notes__), "a version was written: never say otherwise"

    retry = _build(home, 4, tag="x")
    assert retry.version == written
    assert se.load("d", home=home).version == retry.version, "the retry moved latest"
    assert se.load("d@x", home=home).version == retry.version, "and the tag"
    assert set(catalog.version_ids("d")) == {first.version, written}, "no second copy of the same rows"
    assert _build(home, 4).build_info.startswith("reused"), "and the source is recognised from then on"


def test_a_tag_whose_ref_is_a_folder_fails_before_the_generator_runs(home: Path) -> None:
    first = _build(home, 3)
    (home / "d" / "refs" / "x" / "stray").mkdir(parents=True)
    CALLS.clear()
    with pytest.raises(CacheWriteError, match=r"tag 'x' of 'd'.*refs/x is a folder, not a ref file; move it away"):
        _build(home, 5, tag="x")
    assert CALLS == [], "no work before the tag is known to move"
    assert Catalog(home).version_ids("d") == [first.version]
    with pytest.raises(CacheWriteError, match="is a folder"):
        first.drop([0]).save(tag="x", progress=False)
    assert Catalog(home).version_ids("d") == [first.version], "a save's tag is checked before its rows are written"


def test_an_invalid_tag_fails_before_the_generator_runs(home: Path) -> None:
    CALLS.clear()
    with pytest.raises(se.InvalidNameError, match="tag must start with a letter"):
        _build(home, 3, tag="a/b")
    assert CALLS == []


def test_a_build_on_a_bucket_retried_after_its_tag_failed_moves_the_tag_and_latest(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(bucket, 3)
    real = ObjectStore._put

    def put(self: ObjectStore, key: str, text: str, mode: Any) -> bool:
        if key.endswith("d/refs/x"):
            msg = f"{self.url}/{key}: injected: the server refused the PUT"
            raise RemoteStoreError(msg)
        return real(self, key, text, mode)

    with monkeypatch.context() as patched:  # not monkeypatch.undo(): the fixture's environment stays
        patched.setattr(ObjectStore, "_put", put)
        with pytest.raises(RemoteStoreError) as raised:
            _build(bucket, 4, tag="x")
    catalog = StoreCatalog(open_store(bucket))
    assert catalog.read_ref("d", "latest") == first.version
    note = failure_note_of(raised.value)
    assert note is not None
    assert "latest was not moved" in note

    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the leases this process let go when the PUT failed are its own again
        retry = _build(bucket, 4, tag="x")
    assert time.monotonic() - started < 15, "the retry waited for leases of its own to run out"
    assert se.load("d", home=bucket).version == retry.version == se.load("d@x", home=bucket).version
    assert len(catalog.version_ids("d")) == 2


def test_a_map_whose_tag_cannot_move_fails_before_the_function_runs(home: Path) -> None:
    ds = _build(home, 3)
    (home / "d" / "refs" / "x").mkdir(parents=True)
    seen: list[int] = []

    def double(row: dict[str, Any]) -> dict[str, Any]:
        seen.append(row["x"])
        return {"y": row["x"] * 2}

    with pytest.raises(CacheWriteError, match="refs/x is a folder"):
        ds.map(double, tag="x", progress=False)
    assert seen == []
