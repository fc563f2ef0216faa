"""One rule for which code is ours and which is the user's: tracebacks, warnings and fingerprints use it alike."""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import _frames


def test_the_package_folder_is_named_once_and_is_this_package() -> None:
    assert Path(_frames.PACKAGE_DIR) == Path(se.__file__).resolve().parent
    assert _frames.in_package(se.__file__)
    assert _frames.in_package(str(Path(_frames.PACKAGE_DIR) / "storage" / "write" / "writer.py"))
    assert not _frames.in_package(__file__)
    assert not _frames.in_package(_frames.PACKAGE_DIR + "_notebooks" + os.sep + "mine.py"), "a sibling folder"


def test_user_files_are_neither_ours_nor_a_librarys() -> None:
    assert _frames.is_user_file(__file__)
    assert _frames.is_user_file("<ipython-input-3-1a2b>")
    assert not _frames.is_user_file(os.__file__)
    assert not _frames.is_user_file(pytest.__file__)
    assert not _frames.is_user_file(se.__file__)
    assert not _frames.is_user_file("<frozen importlib._bootstrap>")
    assert not _frames.is_user_file("pyarrow/table.pxi"), "Cython frames carry relative paths"


def test_a_builds_traceback_without_our_frames_keeps_the_users_line(tmp_path: Path) -> None:
    def broken() -> Iterator[dict[str, int]]:
        yield {"x": 1}
        raise ZeroDivisionError  # the user's own line

    with pytest.raises(ZeroDivisionError) as caught:
        se.build(broken, se.Features(x=se.Value("int64")), home=tmp_path, progress=False)
    everything = traceback.extract_tb(caught.value.__traceback__)
    assert any(_frames.in_package(f.filename) for f in everything), "the error went through our code"
    kept = _frames.user_frames(caught.value.__traceback__)
    assert kept
    assert not any(_frames.in_package(f.filename) for f in kept)
    assert kept[-1].name == "broken"
    assert kept[-1].line == "raise ZeroDivisionError  # the user's own line"
