"""A temp file that cannot be removed never turns a save into a failure, nor hides the error that stopped one.

Seen in ``bench_reliability.py --full``: an injected EIO on the unlink of ``refs/.latest.tmp-*`` after a
save had moved ``latest`` came out of the save as a raw ``OSError``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers


def _failing_unlink_of_temp_refs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """os.unlink raises EIO for the temp files of refs (a failing disk); returns the paths it refused."""
    real = os.unlink
    refused: list[str] = []

    def unlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        name = os.fspath(path)
        if "/refs/." in name and ".tmp-" in name:
            refused.append(name)
            raise OSError(errno.EIO, "injected I/O error", name)
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    return refused


def test_a_save_whose_temp_ref_cannot_be_removed_still_moves_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 40}, home=tmp_path, progress=False)
    _failing_unlink_of_temp_refs(monkeypatch)
    saved = ds.set(3, "x", -3).save(message="fix row 3", progress=False)
    monkeypatch.undo()
    again = se.load("t", home=tmp_path)
    assert again.cache_dir.name == saved.cache_dir.name
    assert again[3]["x"] == -3


def test_a_failed_publish_raises_its_own_error_when_its_temp_ref_cannot_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = se.build(numbers, NUM_FEATURES, name="t", kwargs={"n": 40}, home=tmp_path, progress=False)
    refused = _failing_unlink_of_temp_refs(monkeypatch)
    real_replace = os.replace

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str], **kwargs: object) -> None:
        if os.fspath(target).endswith("/refs/latest"):
            raise OSError(errno.ENOSPC, "injected: no space left", os.fspath(target))
        real_replace(source, target, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(se.StableExploreError, match="no space left"):
        ds.set(3, "x", -3).save(message="fix row 3", progress=False)
    assert refused  # the publish tried to remove its temp ref, and could not
    monkeypatch.undo()
    assert se.load("t", home=tmp_path).cache_dir.name == ds.cache_dir.name  # latest did not move
    se.gc("t", home=tmp_path)  # the temp ref left behind by this (live) process stays until it is gone
    assert not se.fsck(home=tmp_path).problems
