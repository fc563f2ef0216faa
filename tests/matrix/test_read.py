"""Every read path of the shared build equals the model: items, slices, take, filter, pandas, Arrow, Parquet, torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.matrix.checks import assert_rows, canon
from tests.matrix.conftest import Cell, cell_params

CELLS = cell_params()


def _pandas_rows(frame: Any) -> list[dict[str, Any]]:
    return [dict(zip(frame.columns, values, strict=True)) for values in frame.itertuples(index=False, name=None)]


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_slices_take_and_filter(cell: Cell) -> None:
    ds, model = cell.ds, cell.model()
    assert_rows(ds.features, list(ds[5:19]), model[5:19], f"{cell.id} ds[5:19]")
    assert_rows(ds.features, list(ds[::-3]), model[::-3], f"{cell.id} ds[::-3]")
    rows = [23, 0, 8, 8, 7]  # across shards, repeated, out of order
    assert_rows(ds.features, list(ds.select(rows)), [model[i] for i in rows], f"{cell.id} select")
    assert ds.select(rows).keys() == [model[i]["__key__"] for i in rows]
    first, feature = next((n, f) for n, f in ds.features.items() if any(row[n] is None for row in model))
    present = ds.filter(lambda row: row[first] is not None)  # decodes every row
    want = [row for row in model if canon(feature, row[first]) is not None]
    assert 0 < len(want) < len(model)
    assert present.keys() == [row["__key__"] for row in want]
    assert_rows(ds.features, list(present), want, f"{cell.id} filter(fn)")
    if cell.fset.label_column is not None:
        dogs = ds.filter(**{cell.fset.label_column: "dog"})
        want = [row for row in model if row[cell.fset.label_column] == "dog"]
        assert dogs.keys() == [row["__key__"] for row in want]
        assert_rows(ds.features, list(dogs), want, f"{cell.id} filter(label='dog')")


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_to_pandas_and_to_arrow(cell: Cell) -> None:
    ds, model = cell.ds, cell.model()
    frame = ds.to_pandas(images="bytes")
    assert list(frame.columns) == list(ds.features)
    assert_rows(ds.features, _pandas_rows(frame), model, f"{cell.id} to_pandas", pandas=True)
    table = ds.to_arrow()
    assert table.column_names == list(ds.features)
    assert_rows(ds.features, table.to_pylist(), model, f"{cell.id} to_arrow")
    part = ds[3:11].to_arrow(with_row_columns=True)
    assert part.column("__key__").to_pylist() == [row["__key__"] for row in model[3:11]]


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_to_parquet(cell: Cell, tmp_path: Path) -> None:
    path = cell.ds.to_parquet(tmp_path / "out.parquet")
    table = pq.read_table(path)
    assert table.num_rows == len(cell.model())
    assert_rows(cell.ds.features, table.to_pylist(), cell.model(), f"{cell.id} to_parquet")


@pytest.mark.parametrize("cell", CELLS, indirect=True)
def test_a_torch_dataloader_and_to_iterable(cell: Cell) -> None:
    torch = pytest.importorskip("torch", reason="CI installs torch==2.13.0 (a local CPU build)")
    ds, model = cell.ds, cell.model()
    identity = lambda batch: batch  # noqa: E731 - rows as the dataset gives them
    loader = torch.utils.data.DataLoader(ds, batch_size=5, collate_fn=identity)
    rows = [row for batch in loader for row in batch]
    assert_rows(ds.features, rows, model, f"{cell.id} DataLoader")
    workers = torch.utils.data.DataLoader(ds.to_iterable(), batch_size=None, num_workers=2)
    streamed = list(workers)
    by_key = {row["__key__"]: row for row in model}
    assert len(streamed) == len(model)
    # to_iterable rows carry no key: match them to the model by their position-free content
    wanted = sorted(repr([canon(f, row[n]) for n, f in ds.features.items()]) for row in by_key.values())
    got = sorted(repr([canon(f, row[n]) for n, f in ds.features.items()]) for row in streamed)
    assert got == wanted, f"{cell.id} to_iterable over 2 workers: other rows than the model's"
