"""Computed columns in a bucket (a real SeaweedFS on loopback): map, add_columns, save, verify, fsck, gc, push, pull."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.format.version_files import version_files

pytest.importorskip("obstore")

FEATURES = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]))


def _pets(home: Path | str, jpegs: list[bytes], n: int = 600) -> se.CachedDataset:
    rows = [(f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": i % 2}) for i in range(n)]
    return se.build(rows, FEATURES, name="pets", shard_size="32KB", batch_size=100, home=home, progress=False)


def brightness(row: dict) -> dict:
    return {"brightness": float(np.asarray(row["image"]).mean())}


def test_map_and_add_columns_in_a_bucket_home(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    local = _pets(tmp_path / "local", jpegs)
    raw = _pets(bucket, jpegs)
    mapped = raw.map(brightness, progress=False, set_latest=True)
    assert mapped.home == bucket
    assert mapped.version == local.map(brightness, progress=False).version  # the same rows, the same id
    store = ObjectStore(bucket)
    names = [f.name for f in version_files(mapped.cache_meta.raw or {})]
    groups = [name for name in names if name.startswith("group-") and name.endswith(".arrow")]
    assert groups
    for name in groups:  # the group files are in the bucket beside the (copied) shards
        assert store.size(f"pets/versions/{mapped.version}/{name}") is not None
    assert raw.map(brightness, progress=False).build_info == "reused: same function, parent version and features"
    loaded = se.load(f"{bucket}/pets")
    assert loaded.version == mapped.version
    assert loaded["brightness"] == local.map(brightness, progress=False)["brightness"]
    scored = loaded.add_columns({"score": np.linspace(0, 1, 600)}, progress=False)
    clean = scored.drop([0]).set(1, "score", 5.0).save(message="fix", progress=False)
    assert se.load(f"{bucket}/pets")[0]["score"] == 5.0
    assert se.verify(clean).num_rows == 599
    assert se.verify(f"pets@{scored.version}", home=bucket).num_rows == 600
    checked = se.fsck(home=bucket)
    assert checked.ok, str(checked)
    se.tag(clean, "clean")
    freed = se.gc("pets", keep=0, home=bucket)
    assert sorted(freed.removed) == sorted(f"pets@{v}" for v in (raw.version, mapped.version, scored.version))
    assert se.load(f"{bucket}/pets@clean")[5]["brightness"] == clean[5]["brightness"]


def test_push_and_pull_a_version_with_column_groups(tmp_path: Path, bucket: str, jpegs: list[bytes]) -> None:
    raw = _pets(tmp_path / "mine", jpegs)
    se.push(raw, bucket, progress=False)
    scored = raw.add_columns({"score": np.arange(600) / 4}, progress=False)
    report = se.push(scored, bucket, progress=False)
    sent = {f.name for f in version_files(scored.cache_meta.raw or {}) if f.name.startswith("group-")}
    assert sent
    assert report.bytes_sent < raw.nbytes / 4  # the group files and the small files, not the images again
    theirs = se.pull(f"{bucket}/pets", home=tmp_path / "theirs", progress=False)
    assert theirs.version == scored.version
    assert theirs["score"][:3] == [0.0, 0.25, 0.5]
    assert se.verify(theirs).num_rows == 600
