"""Probes for ``test_conftest.py``: builds with the default home, run in a child process whose HOME is a temp dir.

Not collected on its own (the name does not start with ``test_``): ``test_conftest.py`` passes this file
to a child pytest, with ``HOME`` pointing at a temp dir, so the "real" default home these probes look at,
``~/.cache/stable-explore``, is a throwaway one and never the user's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import stable_explore as se

REAL_DEFAULT_HOME = Path.home() / ".cache" / "stable-explore"
NUM = se.Features(x=se.Value("int64"))


@pytest.fixture(autouse=True)
def _only_with_a_temporary_home() -> None:
    if os.environ.get("STABLE_EXPLORE_PROBE_HOME") != str(Path.home()):
        pytest.fail("home_probe.py runs only from tests/test_conftest.py, with HOME set to a temp dir")


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def build_with_the_default_home(default_home: Path) -> None:
    ds = se.build([{"x": 2}], NUM, name="probe", progress=False)  # no home=: the default
    assert ds.cache_dir.is_relative_to(default_home)
    assert se.load("probe").version == ds.version


def test_a_build_does_not_create_the_default_home(default_home: Path) -> None:
    assert not REAL_DEFAULT_HOME.exists()
    build_with_the_default_home(default_home)
    assert not REAL_DEFAULT_HOME.exists()


def test_a_build_does_not_change_an_existing_default_home(default_home: Path) -> None:
    se.build([{"x": 1}], NUM, name="earlier", home=REAL_DEFAULT_HOME, progress=False)  # the user's own cache
    before = snapshot(REAL_DEFAULT_HOME)
    build_with_the_default_home(default_home)
    assert snapshot(REAL_DEFAULT_HOME) == before
