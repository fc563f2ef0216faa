"""Listings: every dataset, every version newest first, with tags."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from tests.sources import NUM_FEATURES, numbers


def test_versions_datasets_and_tags(home: Path) -> None:
    a = se.build(numbers, NUM_FEATURES, args=(3,), home=home, progress=False)
    b = se.build(numbers, NUM_FEATURES, args=(4,), home=home, progress=False)
    se.tag(a, "clean", home=home)
    table = se.versions("numbers", home=home)
    assert [row["version"] for row in table] == [b.version, a.version]  # newest first
    tags = {row["version"]: row["tags"] for row in table}
    assert tags[a.version] == ["clean"]
    assert tags[b.version] == ["latest"]
    frame = table.to_pandas()
    assert list(frame.columns) == ["version", "created", "rows", "size", "parent", "message", "tags"]
    assert "<table" in table._repr_html_()
    assert "numbers" in str(se.datasets(home=home))
    listing = se.datasets(home=home)
    assert listing[0]["name"] == "numbers"
    assert listing[0]["versions"] == 2
    assert listing[0]["tags"] == ["clean"]
    se.tag(a, "latest", home=home)  # the user may say which version is the latest (issue 11)
    assert se.load("numbers", home=home).version == a.version
    with pytest.raises(ValueError, match="tag must"):
        se.tag(a, "../escape", home=home)
