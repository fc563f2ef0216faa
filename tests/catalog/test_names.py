"""Names of datasets and tags, and where the home is."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from tests.sources import NUM_FEATURES


def test_home_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "env-home"))
    ds = se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="envy", progress=False)
    assert ds.cache_dir.is_relative_to(tmp_path / "env-home")
    assert se.load("envy").version == ds.version


def test_names_are_checked(home: Path) -> None:
    with pytest.raises(ValueError, match="dataset name"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, name="../up", home=home, progress=False)
    with pytest.raises(TypeError, match="name= is required"):
        se.build([{"x": 1, "s": "a"}], NUM_FEATURES, home=home, progress=False)
