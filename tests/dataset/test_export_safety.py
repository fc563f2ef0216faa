"""Exports never delete what they did not write: not a home, a dataset, a version, a shard, nor a user's folder.

Before, ``ds.to_mds(path)`` and ``ds.export(path, layout="stable-datasets")`` replaced whatever folder
was at ``path`` (the home: every dataset gone, and fsck then saw nothing wrong), ``ds.to_parquet`` wrote
over a shard of the version it exported, and ``ds.to_mds('.')`` failed with pathlib's own ValueError.
Each test here ran on that code and lost data (or raised the raw error); now the export is refused
with a message naming the path and what to do, and the data is still there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Value
from stable_explore.cli import main
from stable_explore.dataset import export_layout
from stable_explore.dataset._export_target import EXPORT_MARKER

FEATURES = Features(x=Value("int64"), label=ClassLabel(names=["cat", "dog"]))


@pytest.fixture
def ds(home: Path) -> CachedDataset:
    rows = [(f"k{i}", {"x": i, "label": "dog" if i % 2 else "cat"}) for i in range(6)]
    return se.build(rows, FEATURES, name="pets", home=home, progress=False)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A folder for exports, beside the home (not in it)."""
    folder = tmp_path / "exports"
    folder.mkdir()
    return folder


def _intact(ds: CachedDataset, home: Path) -> None:
    """The dataset is still in its home, every shard matches its digest, and fsck finds nothing wrong."""
    assert se.load("pets", home=home).version == ds.version
    assert [row["x"] for row in se.load("pets", home=home)] == list(range(6))
    se.verify(ds)
    report = se.fsck(home=home)
    assert report.ok, str(report)


@pytest.mark.parametrize("where", ["home", "dataset", "versions", "version", "above-home"])
@pytest.mark.parametrize("layout", ["mds", "stable-datasets", "lance"])
def test_a_folder_export_never_replaces_a_home_dataset_or_version(
    ds: CachedDataset, home: Path, where: str, layout: str
) -> None:
    target = {
        "home": home,
        "dataset": home / "pets",
        "versions": home / "pets" / "versions",
        "version": ds.cache_dir,
        "above-home": home.parent,
    }[where]
    with pytest.raises(se.ExportTargetError) as caught:
        ds.export(target, layout=layout, overwrite=True)
    message = str(caught.value)
    assert str(target) in message
    assert "nothing was written" in message
    _intact(ds, home)


def test_to_mds_of_the_version_itself_is_refused(ds: CachedDataset, home: Path) -> None:
    with pytest.raises(se.ExportTargetError, match="inside the catalog home"):
        ds.to_mds(ds.cache_dir, overwrite=True)
    _intact(ds, home)


def test_a_path_inside_another_home_is_refused(ds: CachedDataset, home: Path, tmp_path: Path) -> None:
    other = tmp_path / "team-home"
    se.build([{"x": 1, "label": "cat"}], FEATURES, name="other", home=other, progress=False)
    with pytest.raises(se.ExportTargetError, match="catalog home"):
        ds.to_mds(other)
    with pytest.raises(se.ExportTargetError, match="a dataset's folder"):
        ds.to_mds(other / "other" / "mds")
    assert [row["x"] for row in se.load("other", home=other)] == [1]


def test_the_default_home_is_refused_too(ds: CachedDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = tmp_path / "default-home"
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(default))
    with pytest.raises(se.ExportTargetError, match=str(default)):
        ds.to_mds(default / "pets-mds")  # an empty home: no dataset there yet, still a home


def test_to_parquet_over_a_shard_of_the_version_is_refused(ds: CachedDataset, home: Path) -> None:
    shard = next(ds.cache_dir.glob("shard-*.arrow"))
    before = shard.read_bytes()
    with pytest.raises(se.ExportTargetError, match="inside the catalog home"):
        ds.to_parquet(shard)
    assert shard.read_bytes() == before
    _intact(ds, home)


def test_the_command_line_refuses_a_shard_and_names_it(
    ds: CachedDataset, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = next(ds.cache_dir.glob("shard-*.arrow"))
    copy = shard.with_name("copy.csv")
    assert main(["--home", str(home), "export", "pets", "--to", str(copy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("stable-explore export: refusing to export to ")
    assert str(copy) in err
    assert not copy.exists()
    _intact(ds, home)


@pytest.mark.parametrize("path", [".", "", "/"])
def test_a_path_without_a_name_says_what_is_wrong(ds: CachedDataset, path: str) -> None:
    with pytest.raises(se.ExportTargetError, match="needs a path of its own"):
        ds.to_mds(path)
    with pytest.raises(se.ExportTargetError, match="needs a path of its own"):
        ds.to_parquet(path)


def test_a_non_empty_folder_no_export_wrote_is_refused(ds: CachedDataset, out: Path) -> None:
    mine = out / "my-project"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for overwrite in (False, True):
        with pytest.raises(se.ExportTargetError) as caught:
            ds.to_mds(mine, overwrite=overwrite)
        message = str(caught.value)
        assert str(mine) in message
        assert "not empty (1 entries: notes.txt)" in message
        assert "Export to a new or empty folder" in message
    assert (mine / "notes.txt").read_text() == "keep me"


def test_a_file_is_never_replaced_by_a_folder_export(ds: CachedDataset, out: Path) -> None:
    mine = out / "notes.txt"
    mine.write_text("keep me")
    with pytest.raises(se.ExportTargetError, match="it is a file"):
        ds.to_mds(mine, overwrite=True)
    assert mine.read_text() == "keep me"


@pytest.mark.parametrize("layout", ["mds", "stable-datasets", "lance"])
def test_re_export_replaces_its_own_folder_with_overwrite(ds: CachedDataset, out: Path, layout: str) -> None:
    target = out / "copy"
    ds.export(target, layout=layout)
    marker = json.loads((target / EXPORT_MARKER).read_text())
    assert marker == {"written_by": "stable-explore", "layout": layout, "dataset": "pets", "version": ds.version}
    with pytest.raises(se.ExportTargetError, match="overwrite"):
        ds.export(target, layout=layout)
    ds[:2].export(target, layout=layout, overwrite=True)
    if layout == "mds":  # se.load does not read MDS: its sidecar counts the rows
        assert json.loads((target / "stable-explore.json").read_text())["num_rows"] == 2
    else:
        assert len(se.load(target, home=out.parent / "home")) == 2
    assert (target / EXPORT_MARKER).is_file()


def test_an_empty_folder_is_written(ds: CachedDataset, out: Path) -> None:
    target = out / "empty"
    target.mkdir()
    assert json.loads((ds.to_mds(target) / "stable-explore.json").read_text())["num_rows"] == 6


def test_a_single_file_export_replaces_its_file_whole(ds: CachedDataset, out: Path) -> None:
    target = out / "pets.parquet"
    target.write_text("old")
    ds.to_parquet(target)
    assert pq.read_table(target).num_rows == 6
    assert sorted(p.name for p in out.iterdir()) == ["pets.parquet"]  # no temp file left beside it
    with pytest.raises(se.ExportTargetError, match="it is a folder"):
        ds.to_parquet(out)


# -- one rule for the layout a path names: se.export, ds.export and the command line ------------------------------


def test_se_export_infers_csv_and_json_from_the_suffix(ds: CachedDataset, out: Path) -> None:
    frame = pd.read_csv(se.export(ds, out / "d.csv"))
    assert list(frame.columns) == ["key", "x", "label"]
    assert frame["key"].tolist() == ds.keys()
    assert frame["label"].tolist()[:2] == ["cat", "dog"]
    lines = (se.export("pets", out / "d.jsonl", home=out.parent / "home")).read_text().splitlines()
    assert json.loads(lines[1]) == {"key": "k1", "x": 1, "label": "dog"}
    assert json.loads(se.export(ds, out / "d.json").read_text())[0] == {"key": "k0", "x": 0, "label": "cat"}
    assert pq.read_table(se.export(ds, out / "d.parquet")).num_rows == 6


def test_a_folder_layout_must_be_named(ds: CachedDataset, out: Path) -> None:
    with pytest.raises(se.InvalidOptionError, match=r"cannot tell the layout from 'copy'.*layout="):
        se.export(ds, out / "copy")
    assert not (out / "copy").exists()
    assert export_layout("x.CSV") == "csv"
    assert export_layout("x.csv", "parquet") == "parquet"


def test_the_command_line_and_se_export_write_the_same_csv(
    ds: CachedDataset, home: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "export", "pets", "--to", str(out / "cli.csv")]) == 0
    assert main(["--home", str(home), "export", "pets", "--to", str(out / "cli.jsonl")]) == 0
    capsys.readouterr()
    assert (out / "cli.csv").read_bytes() == se.export(ds, out / "api.csv").read_bytes()
    assert (out / "cli.jsonl").read_bytes() == se.export(ds, out / "api.jsonl").read_bytes()


def test_nothing_is_left_in_the_exports_folder_after_a_refusal(ds: CachedDataset, home: Path) -> None:
    before = sorted(p.name for p in home.iterdir())
    with pytest.raises(se.ExportTargetError):
        ds.export(home / "copy", layout="stable-datasets")
    assert sorted(p.name for p in home.iterdir()) == before
