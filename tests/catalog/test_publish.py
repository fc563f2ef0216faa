"""Publishing: the version layout, refs, and a version id that depends on content only."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers


def test_layout_refs_and_version_id(home: Path) -> None:
    ds = se.build(numbers, NUM_FEATURES, args=(10,), home=home, progress=False, description="ten")
    assert ds.name == "numbers"
    version_dir = home / "numbers" / "versions" / ds.version
    assert ds.cache_dir == version_dir
    assert (version_dir / "_metadata.json").is_file()
    assert (home / "numbers" / "refs" / "latest").read_text().strip() == ds.version
    raw = json.loads((version_dir / "_metadata.json").read_text())
    for field in ("features", "shard_hashes", "version_id", "created_at", "parent", "operations"):
        assert field in raw
    for field in ("source_fingerprint", "description", "license", "metadata", "content_digest"):
        assert field in raw
    assert raw["version_id"] == ds.version
    assert raw["description"] == "ten"


def test_same_content_has_the_same_version_id_in_any_process_and_home(tmp_path: Path) -> None:
    rows = [{"x": i, "s": "a"} for i in range(50)]
    a = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "a", progress=False)
    b = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "b", progress=False, batch_size=7, shard_size=1)
    assert b.num_shards > 1
    assert a.version == b.version
    script = textwrap.dedent(
        f"""
        import stable_explore as se
        rows = [{{"x": i, "s": "a"}} for i in range(50)]
        features = se.Features(x=se.Value("int64"), s=se.Value("string"))
        print(se.build(rows, features, name="n", home={str(tmp_path / "c")!r}, progress=False).version)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == a.version
    changed = se.build(rows, NUM_FEATURES, name="n", home=tmp_path / "a", progress=False, description="other")
    assert changed.version != a.version


def _fail_fsync_of(directory: Path, error: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Inject a failing fsync (``error``) of one directory: the real call runs for every other fd."""
    real = os.fsync
    failed: list[str] = []

    def fsync(fd: int) -> None:
        if Path(f"/proc/self/fd/{fd}").readlink() == directory:
            failed.append(str(directory))
            raise OSError(error, os.strerror(error))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return failed


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the fsynced directory through /proc")
def test_a_failed_fsync_of_versions_fails_the_publish_and_leaves_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    failed = _fail_fsync_of(home / "numbers" / "versions", errno.EIO, monkeypatch)
    with pytest.raises(se.CacheWriteError) as caught:
        se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    assert failed  # the fault really was injected
    assert caught.value.errno == errno.EIO
    assert caught.value.filename == str(home / "numbers" / "versions")
    assert f"numbers@{old.version} is kept as the latest version" in str(caught.value.__notes__)
    monkeypatch.undo()
    assert [row["version"] for row in se.versions("numbers", home=home)] == [old.version]  # nothing half-published
    assert se.load("numbers", home=home).version == old.version
    again = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    assert len(again) == 4


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the fsynced directory through /proc")
def test_a_file_system_that_cannot_fsync_directories_still_publishes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    failed = _fail_fsync_of(home / "numbers" / "versions", errno.EINVAL, monkeypatch)
    ds = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    assert failed
    assert len(ds) == 4
    assert se.load("numbers", home=home).version == ds.version


def test_a_failed_first_build_leaves_no_empty_dataset_folder(home: Path) -> None:
    def broken() -> Any:
        yield {"x": 1, "s": "one"}
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="the source failed"):
        se.build(broken, NUM_FEATURES, name="broken", home=home, progress=False)
    assert not (home / "broken").exists()  # nothing for ls, fsck or the next build to trip on
    assert "broken" not in str(se.datasets(home=home))

    se.build(numbers, NUM_FEATURES, args=(3,), name="kept", home=home, progress=False)
    with pytest.raises(RuntimeError, match="the source failed"):
        se.build(broken, NUM_FEATURES, name="kept", home=home, progress=False)
    assert len(se.load("kept", home=home)) == 3  # a failed rebuild keeps what was there
