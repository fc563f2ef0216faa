"""Issue 21 item 1: pending edits are kept per (row, column), so edits of two columns of one row both land."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import stable_explore as se

FEATURES = se.Features(
    label=se.ClassLabel(names=["cat", "dog"]),
    flag=se.ClassLabel(names=["x", "y"]),
    name=se.Value("string"),
    score=se.Value("int64"),
)
ROWS = 40


def _build(home: Path) -> se.CachedDataset:
    rows = ((f"k{i:03d}", {"label": 0, "flag": 0, "name": f"n{i}", "score": i}) for i in range(ROWS))
    return se.build(rows, FEATURES, name="two", home=home, progress=False)


def _expected(edits: dict[tuple[int, str], Any], dropped: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    rows = [{"label": 0, "flag": 0, "name": f"n{i}", "score": i} for i in range(ROWS)]
    for (row, column), value in edits.items():
        rows[row][column] = value
    return [row for i, row in enumerate(rows) if i not in dropped]


def _check_every_read(ds: se.CachedDataset, rows: list[dict[str, Any]]) -> None:
    columns = list(FEATURES)
    assert ds.to_arrow().select(columns).to_pylist() == rows
    assert [{c: ds[i][c] for c in columns} for i in range(len(ds))] == rows
    picks = [len(rows) - 1, 1, 0]
    assert ds.select(picks).to_arrow().select(columns).to_pylist() == [rows[i] for i in picks]
    assert ds[0:5].to_arrow().select(columns).to_pylist() == rows[0:5]
    for column in columns:
        assert ds.arrow_column(column).to_pylist() == [row[column] for row in rows]
    frame = ds.to_pandas()
    assert list(frame["flag"].astype(str)) == [FEATURES["flag"].names[r["flag"]] for r in rows]
    assert list(frame["label"].astype(str)) == [FEATURES["label"].names[r["label"]] for r in rows]


def _check_saved(ds: se.CachedDataset, rows: list[dict[str, Any]], home: Path) -> None:
    _check_every_read(ds, rows)
    fresh = se.load(ds.cache_dir)
    _check_every_read(fresh, rows)
    assert se.verify(ds).num_rows == len(rows)
    assert not se.fsck(home=home).problems
    # the version id is a function of the rows: a fresh build of the same rows has it
    rebuilt = se.build(list(zip(ds.keys(), rows, strict=True)), FEATURES, name="again", home=home, progress=False)
    assert rebuilt.version == ds.version


def test_relabels_in_two_columns_of_one_row_both_land(home: Path) -> None:
    ds = _build(home)
    draft = ds.relabel({1: "dog"}, column="label").relabel({1: "y"}, column="flag")
    assert draft.pending_edits.relabelled == {(1, "label"): 1, (1, "flag"): 1}
    saved = draft.save(progress=False)
    _check_saved(saved, _expected({(1, "label"): 1, (1, "flag"): 1}), home)
    # both columns are recorded as cell patches of one row (nothing rewritten)
    patches = saved.cache_meta.cell_patches
    assert patches is not None
    assert [dict(cells) for _, _, _, cells in patches.entries] == [{"flag": 1, "label": 1}]
    ops = {op["column"]: op["changes"] for op in saved.metadata["operations"]}
    assert ops == {"label": [["k001", "cat", "dog"]], "flag": [["k001", "x", "y"]]}
    diff = se.compare(ds, saved)
    assert diff.rows.changed_fields == {"k001": {"label": ("cat", "dog"), "flag": ("x", "y")}}
    assert diff.labels["flag"]["relabelled"] == {("x", "y"): 1}
    assert diff.labels["label"]["relabelled"] == {("cat", "dog"): 1}


def test_sets_of_two_columns_of_one_row_both_land(home: Path) -> None:
    ds = _build(home)
    saved = ds.set(2, "name", "renamed").set(2, "score", -5).save(progress=False)
    _check_saved(saved, _expected({(2, "name"): "renamed", (2, "score"): -5}), home)


def test_a_relabel_and_a_set_of_one_row_both_land(home: Path) -> None:
    ds = _build(home)
    saved = ds.relabel({3: "dog"}).set(3, "flag", "y").set(3, "score", 99).save(progress=False)
    _check_saved(saved, _expected({(3, "label"): 1, (3, "flag"): 1, (3, "score"): 99}), home)


def test_the_same_cell_edited_twice_keeps_the_last(home: Path) -> None:
    ds = _build(home)
    draft = ds.relabel({4: "dog"}).relabel({4: "cat"}, column="label").relabel({4: "y"}, column="flag")
    draft = draft.set(4, "flag", "x").set(4, "flag", "y").set(5, "score", 1).set(5, "score", 2)
    saved = draft.save(progress=False)
    _check_saved(saved, _expected({(4, "flag"): 1, (5, "score"): 2}), home)


@pytest.mark.parametrize("drop_first", [True, False])
def test_drop_and_two_column_relabels_commute(home: Path, drop_first: bool) -> None:
    ds = _build(home)
    if drop_first:
        draft = ds.drop([0, 7]).relabel({6: "dog", 7: "dog"}).relabel({6: "y"}, column="flag")
    else:
        draft = ds.relabel({6: "dog", 7: "dog"}).relabel({6: "y"}, column="flag").drop([0, 7])
    saved = draft.save(progress=False)
    _check_saved(saved, _expected({(6, "label"): 1, (6, "flag"): 1}, frozenset({0, 7})), home)
    other = ds.relabel({6: "y"}, column="flag").drop([7]).relabel({6: "dog"}).drop([0]).save(progress=False)
    assert other.version == saved.version


def test_a_second_save_patches_another_column_of_a_patched_row(home: Path) -> None:
    ds = _build(home)
    first = ds.relabel({8: "dog"}).save(progress=False)
    second = first.relabel({8: "y"}, column="flag").save(progress=False)
    _check_saved(second, _expected({(8, "label"): 1, (8, "flag"): 1}), home)
    patches = second.cache_meta.cell_patches
    assert patches is not None
    assert [dict(cells) for _, _, _, cells in patches.entries] == [{"flag": 1, "label": 1}]
    # and a view's chain: rows are positions in the view
    view = second.select([9, 8, 10])
    saved = view.relabel({1: "cat"}).relabel({1: "x"}, column="flag").save(name="view", progress=False)
    assert saved.to_arrow().select(["label", "flag"]).to_pylist() == [
        {"label": 0, "flag": 0},
        {"label": 0, "flag": 0},
        {"label": 0, "flag": 0},
    ]
