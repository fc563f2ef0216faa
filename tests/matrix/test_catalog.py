"""verify, fsck, gc, push/pull and the CLI's export on every cell: clean reports, and the model read back."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import stable_explore as se
from stable_explore.cli import main
from tests.matrix.checks import assert_rows
from tests.matrix.conftest import Cell, Homes, build, cell_params

CELLS = cell_params()
_prefixes = itertools.count()


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_verify_and_fsck_are_clean(cell: Cell) -> None:
    report = se.verify(cell.ds)
    assert (report.num_rows, report.num_shards) == (len(cell.model()), 3)
    assert report.batch_digests == 3
    assert se.verify(f"{cell.fset.name}@{cell.ds.version}", home=cell.home).num_rows == len(cell.model())
    saved = cell.ds.drop([1]).save(message="for fsck", progress=False)
    assert se.verify(saved).num_rows == len(cell.model()) - 1
    found = se.fsck(cell.fset.name, home=cell.home)
    assert found.ok, found.problems
    assert found.versions >= 2


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_gc_keeps_latest_and_tagged_and_frees_the_rest(cell: Cell) -> None:
    name = f"{cell.fset.name}-gc"
    first = build(cell.fset, cell.home, name=name)
    tagged = first.drop([3]).save(message="tagged", tag="keep", progress=False)
    middle = first.drop([4]).save(message="middle", progress=False)
    latest = middle.drop([4]).save(message="latest", progress=False)  # row 4 of middle: row 5 of first
    freed = se.gc(name, keep=1, home=cell.home)
    assert freed > 0
    assert sorted(freed.removed) == sorted([f"{name}@{first.version}", f"{name}@{middle.version}"])
    assert not freed.problems
    model = cell.model()
    assert_rows(
        latest.features,
        list(se.load(name, home=cell.home)),
        [r for i, r in enumerate(model) if i not in (4, 5)],
        f"{cell.id} gc latest",
    )
    assert_rows(
        latest.features,
        list(se.load(f"{name}@keep", home=cell.home)),
        [r for i, r in enumerate(model) if i != 3],
        f"{cell.id} gc tagged",
    )
    assert se.load(name, home=cell.home).version == latest.version
    assert tagged.version in set(se.versions(name, home=cell.home).to_pandas()["version"])
    found = se.fsck(name, home=cell.home)
    assert found.ok, found.problems


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_push_and_pull_round_trip(cell: Cell, homes: Homes, tmp_path: Path) -> None:
    model = cell.model()
    saved = cell.ds.drop([6]).save(message="to push", progress=False)
    want = [row for i, row in enumerate(model) if i != 6]
    # to the other kind of home, and back into a fresh local one
    other = f"{homes.s3}-pushed-{next(_prefixes)}" if cell.home_name == "local" else str(tmp_path / "pushed")
    report = se.push(saved, other, progress=False)
    assert report.files_sent > 0
    assert se.push(saved, other, progress=False).files_sent == 0  # nothing missing: nothing moves
    there = se.load(f"{cell.fset.name}@{saved.version}", home=other)
    assert_rows(there.features, list(there), want, f"{cell.id} pushed")
    url = (
        f"{other}/{cell.fset.name}@{saved.version}"
        if "://" in other
        else f"file://{other}/{cell.fset.name}@{saved.version}"
    )
    pulled = se.pull(url, home=tmp_path / "mine", progress=False)
    assert pulled.version == saved.version
    assert_rows(pulled.features, list(pulled), want, f"{cell.id} pulled")
    assert se.fsck(home=tmp_path / "mine").ok


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_save_under_another_name(cell: Cell) -> None:
    model = cell.model()
    other = cell.ds.drop([10]).save(message="fork", name=f"{cell.fset.name}-fork", progress=False)
    want = [row for i, row in enumerate(model) if i != 10]
    assert_rows(other.features, list(se.load(f"{cell.fset.name}-fork", home=cell.home)), want, f"{cell.id} fork")
    assert se.fsck(f"{cell.fset.name}-fork", home=cell.home).ok


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_cli_export_to_parquet_and_csv(cell: Cell, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{cell.fset.name}@{cell.ds.version}"
    assert main(["--home", cell.home, "export", ref, "--to", str(tmp_path / "out.parquet")]) == 0
    assert "wrote 24 rows" in capsys.readouterr().out
    table = pq.read_table(tmp_path / "out.parquet")
    assert_rows(cell.ds.features, table.to_pylist(), cell.model(), f"{cell.id} CLI export parquet")
    assert main(["--home", cell.home, "export", ref, "--to", str(tmp_path / "out.csv")]) == 0
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert len(lines) == 1 + len(cell.model()) or len(lines) > len(cell.model())  # multi-line cells may wrap
