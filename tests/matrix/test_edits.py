"""Edits (drop, relabel, set, save, a chain of them) show in every read path, and compare reports exactly them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import stable_explore as se
from tests.matrix.checks import assert_rows, canon
from tests.matrix.conftest import Cell, cell_params
from tests.matrix.model import FEATURE_SETS, LABELS

LABELLED = [name for name, f in FEATURE_SETS.items() if f.label_column is not None]


def _check_reads(ds: se.CachedDataset, model: list[dict[str, Any]], where: str) -> None:
    """The saved version, and the same version loaded afresh, read as the model in every read path."""
    fresh = se.load(f"{ds.name}@{ds.version}", home=ds.home)
    for view, how in ((ds, "saved"), (fresh, "loaded")):
        assert view.keys() == [row["__key__"] for row in model], f"{where} {how}: keys"
        assert_rows(view.features, [view[i] for i in range(len(view))], model, f"{where} {how} ds[i]")
        assert_rows(view.features, view.to_arrow().to_pylist(), model, f"{where} {how} to_arrow")
        frame = view.to_pandas(images="bytes")
        rows = [dict(zip(frame.columns, v, strict=True)) for v in frame.itertuples(index=False, name=None)]
        assert_rows(view.features, rows, model, f"{where} {how} to_pandas", pandas=True)
        assert_rows(view.features, list(view[2:9]), model[2:9], f"{where} {how} slice")
    assert se.verify(fresh).num_rows == len(model)


def _assert_diff(a: se.CachedDataset, b: se.CachedDataset, removed: list[str], changed: dict[str, set[str]]) -> None:
    diff = se.compare(a, b)
    assert not diff.identical
    assert sorted(diff.rows.removed) == sorted(removed)
    assert diff.rows.added == []
    assert sorted(diff.rows.changed) == sorted(changed)
    for key, fields in changed.items():
        assert set(diff.rows.changed_fields[key]) == fields, key
    assert diff.rows.unchanged == len(a) - len(removed) - len(changed)
    assert se.compare(b, b).identical


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_drop_then_save(cell: Cell) -> None:
    model = cell.model()
    dropped = [0, 7, 8, 23]  # the first row, a shard's last and the next one's first, the last
    saved = cell.ds.drop(dropped).save(message="drop four", progress=False)
    want = [row for i, row in enumerate(model) if i not in dropped]
    _check_reads(saved, want, f"{cell.id} drop")
    _assert_diff(cell.ds, saved, [model[i]["__key__"] for i in dropped], {})


@pytest.mark.parametrize("cell", cell_params(LABELLED), indirect=True)
def test_relabel_then_save(cell: Cell) -> None:
    model = copy.deepcopy(cell.model())
    column = cell.fset.label_column
    assert column is not None
    changes = {1: "bird", 12: "cat", 22: "dog"}  # 1 and 22 change class; 12 is already "cat": no change
    saved = cell.ds.relabel(changes, column=column).save(message="relabel", progress=False)
    changed = {}
    for row, name in changes.items():
        if model[row][column] != name:
            changed[model[row]["__key__"]] = {column}
        model[row][column] = name
    _check_reads(saved, model, f"{cell.id} relabel")
    _assert_diff(cell.ds, saved, [], changed)


def _set_value(cell: Cell) -> tuple[str, Any]:
    return cell.fset.scalar_column, cell.fset.scalar_value


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_set_then_save(cell: Cell) -> None:
    model = copy.deepcopy(cell.model())
    column, value = _set_value(cell)
    saved = cell.ds.set(9, column, value).set(3, column, None).save(message="set", progress=False)
    model[9][column] = value
    model[3][column] = None
    feature = cell.ds.features[column]
    changed = {
        model[i]["__key__"]: {column}
        for i in (3, 9)
        if canon(feature, cell.model()[i][column]) != canon(feature, model[i][column])
    }
    _check_reads(saved, model, f"{cell.id} set")
    _assert_diff(cell.ds, saved, [], changed)


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_set_any_column(cell: Cell) -> None:
    """set() takes every feature type (lists, arrays, images too): row 9 gets row 5's value, column by column."""
    original = cell.model()
    model = copy.deepcopy(original)
    draft = cell.ds.drop([])
    changed: dict[str, set[str]] = {}
    for column, feature in cell.ds.features.items():
        draft = draft.set(9, column, original[5][column])
        model[9][column] = copy.deepcopy(original[5][column])
        if canon(feature, original[9][column]) != canon(feature, original[5][column]):
            changed.setdefault(original[9]["__key__"], set()).add(column)
    saved = draft.save(message="set every column", progress=False)
    _check_reads(saved, model, f"{cell.id} set every column")
    _assert_diff(cell.ds, saved, [], changed)


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_a_chain_of_edits_and_saves(cell: Cell) -> None:
    """drop, relabel and set in one draft, saved; then a second save on top; row numbers are the first version's."""
    original = cell.model()
    model = copy.deepcopy(original)
    column, value = _set_value(cell)
    label = cell.fset.label_column
    draft = cell.ds.drop([2, 15]).set(16, column, value)
    if label is not None:
        draft = draft.relabel({4: LABELS[(LABELS.index(model[4][label]) + 1) % 3]}, column=label)
        model[4][label] = LABELS[(LABELS.index(original[4][label]) + 1) % 3]
    model[16][column] = value
    first = draft.save(message="chain 1", progress=False)
    want = [row for i, row in enumerate(model) if i not in (2, 15)]
    _check_reads(first, want, f"{cell.id} chain 1")
    second = first.drop([0]).save(message="chain 2", progress=False)  # row 0 of ``first``
    _check_reads(second, want[1:], f"{cell.id} chain 2")
    changed = {original[16]["__key__"]: {column}}
    if label is not None:
        changed[original[4]["__key__"]] = {label}
    _assert_diff(cell.ds, second, [original[i]["__key__"] for i in (0, 2, 15)], changed)


@pytest.mark.parametrize("cell", cell_params(["labels"]), indirect=True)
def test_relabel_two_class_label_columns_of_one_row(cell: Cell) -> None:
    model = copy.deepcopy(cell.model())
    saved = cell.ds.relabel({1: "bird"}, column="label").relabel({1: "x"}, column="flag").save(progress=False)
    model[1]["label"], model[1]["flag"] = "bird", "x"
    _check_reads(saved, model, f"{cell.id} two relabels of row 1")


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_add_and_replace_columns_then_save(cell: Cell) -> None:
    """A column added and one replaced (column groups) read as the model in every path; a save on top keeps them."""
    model = copy.deepcopy(cell.model())
    column, value = _set_value(cell)
    scores = [i / 4 for i in range(len(model))]
    added = cell.ds.add_columns({"score": scores}, message="score", progress=False)
    feature = cell.ds.features[column]
    replaced = added.add_columns({column: [value] * len(model)}, features={column: feature}, progress=False)
    for row, score in zip(model, scores, strict=True):
        row["score"] = score
        row[column] = copy.deepcopy(value)
    assert list(replaced.features) == [*cell.ds.features, "score"]
    _check_reads(replaced, model, f"{cell.id} add_columns")
    assert se.compare(cell.ds, added).schema["columns_added"] == ["score"]
    saved = replaced.drop([0, 23]).set(3, "score", -1.0).save(message="on top of groups", progress=False)
    model[3]["score"] = -1.0
    _check_reads(saved, [row for i, row in enumerate(model) if i not in (0, 23)], f"{cell.id} save on groups")
