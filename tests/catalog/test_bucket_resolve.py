"""Loading a bucket's version by a tag (``latest`` too) costs the same few requests however many versions and tags.

A real SeaweedFS on loopback; requests are counted by the home's store (``ObjectStore.requests``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import CacheNotFoundError
from stable_explore.storage.backends.object import ObjectStore, shared_store
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.storage.kept import forget

pytest.importorskip("obstore")


def _build(bucket: str, start: int) -> se.CachedDataset:
    rows = [(f"k{i}", {"label": i % 2}) for i in range(start, start + 20)]
    return se.build(rows, se.Features(label=se.ClassLabel(names=["a", "b"])), name="pets", home=bucket, progress=False)


def _requests_to_load(bucket: str, ref: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str) -> int:
    """Requests a fresh machine sends to open ``ref`` (a new mirror: its metadata is fetched too)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / label))
    forget()
    store = shared_store(bucket)
    before = store.requests
    se.load(f"{bucket}/{ref}")
    return store.requests - before


def test_loading_by_a_tag_does_not_list_every_version_and_ref(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(bucket, 0)
    one_version = _requests_to_load(bucket, "pets", tmp_path, monkeypatch, "one")
    versions = [first] + [_build(bucket, 100 * n) for n in range(1, 6)]
    for n, ds in enumerate(versions[:4]):
        se.tag(ds, f"t{n}")
    assert len(se.versions("pets", home=bucket)) == 6

    assert _requests_to_load(bucket, "pets", tmp_path, monkeypatch, "latest") == one_version
    assert one_version == 2, "the ref, and the metadata (fetched into the new mirror: no HEAD before it)"
    assert _requests_to_load(bucket, "pets@t1", tmp_path, monkeypatch, "tag") == one_version
    assert se.load(f"{bucket}/pets@t1").version == versions[1].version
    assert se.load(f"{bucket}/pets").version == versions[-1].version

    # a version id prefix, and what does not exist, still resolve through the listing
    assert se.load(f"{bucket}/pets@{versions[2].version[:10]}").version == versions[2].version
    with pytest.raises(CacheNotFoundError, match=r"no version or tag 'nope'.*tags: \['latest', 't0'"):
        se.load(f"{bucket}/pets@nope")


def test_a_tag_naming_a_version_gc_took_resolves_through_the_listing(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _build(bucket, 0)
    se.tag(old, "old")
    _build(bucket, 100)
    ObjectStore(bucket).delete(f"pets/versions/{old.version}/_metadata.json")  # as gc deletes it first
    forget()
    with pytest.raises(CacheNotFoundError, match="no version or tag 'old'"):
        se.load(f"{bucket}/pets@old")
