"""Issue 21 item 2: the row diff compares cells of any Arrow type (lists, lists of lists, fixed-size lists, arrays)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import stable_explore as se

FEATURES = se.Features(
    x=se.Value("int64"),
    seq=se.Sequence(se.Value("int64")),
    nested=se.Sequence(se.Sequence(se.Value("float32"))),
    fixed=se.Sequence(se.Value("int32"), length=3),
    cube=se.Array3D(shape=(2, 2, 1), dtype="uint8"),
    f=se.Value("float64"),
)
ROWS = 50


def _row(i: int) -> dict[str, Any]:
    return {
        "x": i,
        "seq": [i, i + 1] if i % 7 else None,
        "nested": [[float(i)], [], [1.5, 2.5]] if i % 5 else None,
        "fixed": [i, i, i] if i % 4 else None,
        "cube": np.full((2, 2, 1), i % 250, dtype=np.uint8) if i % 6 else None,
        "f": float("nan") if i % 3 == 0 else float(i),
    }


def _build(home: Path, name: str, changes: dict[int, dict[str, Any]] | None = None) -> se.CachedDataset:
    rows = []
    for i in range(ROWS):
        row = _row(i)
        row.update((changes or {}).get(i, {}))
        rows.append((f"k{i:02d}", row))
    return se.build(rows, FEATURES, name=name, home=home, progress=False)


def test_a_set_of_a_scalar_compares_beside_list_columns(home: Path) -> None:
    ds = _build(home, "lists")
    saved = ds.set(3, "x", 9).set(14, "x", -1).save(progress=False)
    diff = se.compare(ds, saved)
    assert diff.rows.changed == ["k03", "k14"]
    # only the field that changed is reported: the lists, the nulls and the NaNs of those rows are equal
    assert diff.rows.changed_fields == {"k03": {"x": (3, 9)}, "k14": {"x": (14, -1)}}
    assert diff.summary().startswith("+0 -0 ~2 rows")
    assert diff.to_dict()["rows"]["changed"]["k03"] == {"x": [3, 9]}


def test_changes_inside_list_array_and_null_cells_are_named(home: Path) -> None:
    a = _build(home, "a")
    cube = np.zeros((2, 2, 1), dtype=np.uint8)
    changes: dict[int, dict[str, Any]] = {
        1: {"seq": [1, 99]},  # a list item
        2: {"nested": [[2.0], [7.0], [1.5, 2.5]]},  # a list inside a list
        3: {"fixed": [3, 3, 4]},  # a fixed-size list
        5: {"cube": cube},  # a 3-D array
        7: {"seq": [7]},  # null -> a list
        9: {"fixed": None, "seq": None},  # lists -> null
        12: {"nested": [[12.0], [], [1.5, 2.5]], "x": 12},  # the same values: not a change
        11: {"f": float("nan")},  # a number -> NaN
    }
    b = _build(home, "b", changes)
    diff = se.compare(a, b)
    assert diff.rows.added == diff.rows.removed == []
    assert diff.rows.changed == ["k01", "k02", "k03", "k05", "k07", "k09", "k11"]
    fields = diff.rows.changed_fields
    assert fields["k01"] == {"seq": ([1, 2], [1, 99])}
    assert fields["k02"] == {"nested": ([[2.0], [], [1.5, 2.5]], [[2.0], [7.0], [1.5, 2.5]])}
    assert fields["k03"] == {"fixed": ([3, 3, 3], [3, 3, 4])}
    assert fields["k05"] == {"cube": (bytes([5] * 4), bytes(4))}
    assert fields["k07"] == {"seq": (None, [7])}
    assert fields["k09"] == {"fixed": ([9, 9, 9], None), "seq": ([9, 10], None)}
    assert list(fields["k11"]) == ["f"]
    assert fields["k11"]["f"][0] == 11.0
    assert np.isnan(fields["k11"]["f"][1])
    frame = diff.to_pandas()
    assert frame["key"].tolist() == diff.rows.changed
    assert diff.to_dict()["rows"]["changed"]["k05"] == {"cube": ["<4 bytes>", "<4 bytes>"]}


def test_a_retyped_list_column_is_compared_value_by_value(home: Path) -> None:
    a = _build(home, "a")
    wider = se.Features({**dict(FEATURES), "seq": se.Sequence(se.Value("int32"))})
    rows = [(f"k{i:02d}", _row(i)) for i in range(ROWS)]
    rows[4][1]["seq"] = [0]
    b = se.build(rows, wider, name="b", home=home, progress=False)
    diff = se.compare(a, b)
    assert "seq" in diff.schema["columns_retyped"]
    assert diff.rows.changed_fields["k04"] == {"seq": ([4, 5], [0])}
