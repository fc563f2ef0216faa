"""Refs move last: a write that fails while a version is published leaves latest where it was (real files).

The failure is an ``EIO`` injected into ``os.replace`` for one target (the tag's or the source record's file),
as a full or failing disk gives it; everything else runs on real files.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore.catalog import Catalog
from stable_explore.errors import CacheWriteError

FEATURES = se.Features(x=se.Value("int64"))


def _build(home: Path, n: int, **options: object) -> se.CachedDataset:
    return se.build([{"x": i} for i in range(n)], FEATURES, name="d", home=home, progress=False, **options)


def _fail_replacing(monkeypatch: pytest.MonkeyPatch, failing: Callable[[str], bool]) -> None:
    real = os.replace

    def replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if failing(os.fspath(target)):
            raise OSError(errno.EIO, "injected I/O error", os.fspath(target))
        real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def test_a_build_whose_tag_cannot_be_written_leaves_latest_where_it_was(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(home, 3)
    _fail_replacing(monkeypatch, lambda target: target.endswith("/refs/clean"))
    with pytest.raises(CacheWriteError):
        _build(home, 4, tag="clean")
    assert Catalog(home).read_ref("d", "latest") == first.version, "the error is the truth: latest did not move"
    monkeypatch.undo()
    assert se.load("d", home=home).version == first.version


def test_a_save_whose_tag_cannot_be_written_leaves_latest_where_it_was(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _build(home, 5)
    _fail_replacing(monkeypatch, lambda target: target.endswith("/refs/clean"))
    with pytest.raises(CacheWriteError):
        first.drop([0]).save(tag="clean", progress=False)
    monkeypatch.undo()
    assert Catalog(home).read_ref("d", "latest") == first.version


def test_a_build_whose_source_record_cannot_be_written_leaves_latest_where_it_was(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rows(n: int) -> Any:  # a generator function: its source record is written with the version
        for i in range(n):
            yield {"x": i}

    first = se.build(rows, FEATURES, name="d", home=home, args=(3,), progress=False)
    _fail_replacing(monkeypatch, lambda target: "/d/sources/" in target)
    with pytest.raises(CacheWriteError):
        se.build(rows, FEATURES, name="d", home=home, args=(4,), progress=False)
    monkeypatch.undo()
    assert Catalog(home).read_ref("d", "latest") == first.version
