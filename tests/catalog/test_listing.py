"""Listings: every dataset, every version newest first, with tags."""

from __future__ import annotations

import re
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


def _break(home: Path, how: str) -> Path:
    """Damage one dataset ``bad`` the way a crash, a bad disk or a hand edit would; return the damaged file."""
    ds = se.build(numbers, NUM_FEATURES, args=(2,), name="bad", home=home, progress=False)
    latest = home / "bad" / "refs" / "latest"
    if how == "non-utf8 ref":
        latest.write_bytes(b"\xff\xfe" + ds.version.encode())
        return latest
    if how == "directory ref":
        latest.unlink()
        latest.mkdir()
        return latest
    if how == "nested metadata":
        meta = ds.cache_dir / "_metadata.json"
        meta.write_text("[" * 100_000, encoding="utf-8")
        return meta
    source = next(p for p in (home / "bad" / "sources").iterdir() if p.is_file())
    source.write_bytes(b"\xff\xfe\x00")
    return source


BREAKAGES = ["non-utf8 ref", "directory ref", "nested metadata", "bad source record"]


@pytest.mark.parametrize("how", BREAKAGES)
def test_one_broken_dataset_does_not_break_the_listing_of_the_others(
    home: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from stable_explore.cli import main

    good = se.build(numbers, NUM_FEATURES, args=(3,), name="good", home=home, progress=False)
    damaged = _break(home, how)
    rows = {row["name"]: row for row in se.datasets(home=home)}
    assert rows["good"]["latest"] == good.version
    assert rows["good"]["rows"] == 3
    assert "problem" not in rows["good"]
    if how == "bad source record":  # a source record only decides cache hits: the listing does not read it
        assert "problem" not in rows["bad"]
    else:
        assert str(damaged) in rows["bad"]["problem"]
        assert "problem" in se.datasets(home=home).columns
    assert main(["--home", str(home), "ls"]) == 0
    out = capsys.readouterr().out
    assert "good" in out
    assert "bad" in out
    if how != "bad source record":
        assert str(damaged) in out


@pytest.mark.parametrize("how", BREAKAGES)
def test_gc_reports_a_broken_dataset_and_collects_the_others(home: Path, how: str) -> None:
    old = se.build(numbers, NUM_FEATURES, args=(3,), name="good", home=home, progress=False)
    se.build(numbers, NUM_FEATURES, args=(4,), name="good", home=home, progress=False)
    damaged = _break(home, how)
    if how in ("non-utf8 ref", "directory ref", "bad source record"):
        with pytest.warns(se.GcProblemWarning, match=re.escape(str(damaged))):
            report = se.gc(home=home, keep=0)
        assert any(str(damaged) in p for p in report.problems)
    else:  # damaged metadata: that version is not deleted by guesswork, nor does it stop gc
        report = se.gc(home=home, keep=0)
    assert f"good@{old.version}" in report.removed
    assert int(report) > 0
    assert len(se.load("good", home=home)) == 4


def test_cli_gc_names_a_broken_dataset_on_stderr_and_exits_1(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stable_explore.cli import main

    old = se.build(numbers, NUM_FEATURES, args=(3,), name="good", home=home, progress=False)
    se.build(numbers, NUM_FEATURES, args=(4,), name="good", home=home, progress=False)
    damaged = _break(home, "directory ref")
    with pytest.warns(se.GcProblemWarning):
        code = main(["--home", str(home), "gc", "--keep", "0"])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"removed good@{old.version}" in out
    assert f"stable-explore gc: {damaged}" in err
