"""Build serially, on two processes and on a Dask cluster: the same version id, and rows equal to the model."""

from __future__ import annotations

from concurrent.futures import Executor
from datetime import date, datetime, timezone
from typing import Any

import pytest

import stable_explore as se
from tests.matrix.checks import assert_rows
from tests.matrix.conftest import HOMES, Cell, Homes, build, cell_params


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_serial_build_reads_back_the_model(cell: Cell) -> None:
    ds = cell.ds
    assert len(ds) == len(cell.model())
    assert ds.num_shards == 3
    assert ds.keys() == [row["__key__"] for row in cell.model()]
    assert_rows(ds.features, [ds[i] for i in range(len(ds))], cell.model(), f"{cell.id} ds[i]")


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_num_proc_2_builds_the_serial_version(cell: Cell) -> None:
    parallel = build(cell.fset, cell.home, name=f"{cell.fset.name}-np2", num_proc=2)
    assert parallel.version == cell.ds.version
    assert_rows(parallel.features, list(parallel), cell.model(), f"{cell.id} num_proc=2")


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_a_dask_cluster_builds_the_serial_version(cell: Cell, dask_executor: Executor) -> None:
    on_dask = build(cell.fset, cell.home, name=f"{cell.fset.name}-dask", executor=dask_executor, num_proc=3)
    assert on_dask.version == cell.ds.version
    assert_rows(on_dask.features, list(on_dask), cell.model(), f"{cell.id} dask")


@pytest.mark.parametrize("home_name", HOMES)
@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("timestamp[us]", [datetime(2024, 2, 29, 12, 30, 1, 5), None, datetime(1969, 12, 31, 23, 59, 59)]),
        ("timestamp[us, tz=UTC]", [datetime(2024, 2, 29, 12, 30, tzinfo=timezone.utc), None]),
        ("date32", [date(2024, 2, 29), None, date(1900, 1, 1)]),
    ],
    ids=["timestamp", "timestamp-tz", "date"],
)
def test_timestamps_and_dates(dtype: str, values: list[Any], home_name: str, homes: Homes) -> None:
    features = se.Features(when=se.Value(dtype))
    ds = se.build(
        [{"when": v} for v in values], features, name=f"when-{dtype[:4]}", home=homes.url(home_name), progress=False
    )
    assert [ds[i]["when"] for i in range(len(values))] == values
    assert ds.to_arrow().column("when").to_pylist() == values
