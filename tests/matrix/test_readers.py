"""Readers that are not ours read every cell right or refuse it: stable-datasets' reader, and the docs/format.md one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import stable_explore as se
from stable_explore.backend import ArrowBackend
from stable_explore.cache import read_sharded_cache_meta
from tests.matrix.checks import assert_rows
from tests.matrix.conftest import Cell, cell_params
from tests.matrix.model import FEATURE_SETS
from tests.test_format_spec import decode, read_version, resolve

LABELLED = [name for name, f in FEATURE_SETS.items() if f.label_column is not None]


def _local_folder(version: se.CachedDataset, tmp_path: Path) -> Path:
    """The version's folder on this disk (a bucket's version is pulled first)."""
    if isinstance(version.home, Path) or "://" not in str(version.home):
        return resolve(Path(str(version.home)), version.name or "", version.version)
    pulled = se.pull(f"{version.home}/{version.name}@{version.version}", home=tmp_path / "pulled", progress=False)
    return resolve(tmp_path / "pulled", version.name or "", pulled.version)


def stable_datasets_read(folder: Path) -> pa.Table | None:
    """stable-datasets' ArrowBackend: version-1 metadata, the shards in order, concatenated; None (refused) else."""
    meta = json.loads((folder / "_metadata.json").read_text())
    if meta["cache_format_version"] != 1:
        return None
    tables = []
    for name in meta["shard_filenames"]:
        with pa.memory_map(str(folder / name)) as source:
            tables.append(ipc.open_file(source).read_all())
    return pa.concat_tables(tables)


def _versions(cell: Cell) -> dict[str, tuple[se.CachedDataset, list[dict[str, Any]]]]:
    model = cell.model()
    dropped = cell.ds.drop([2, 20]).save(message="readers: drop", progress=False)
    out = {"built": (cell.ds, model), "dropped": (dropped, [r for i, r in enumerate(model) if i not in (2, 20)])}
    return out


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_the_format_md_reader_and_the_seed_reader(cell: Cell, tmp_path: Path) -> None:
    for what, (version, model) in _versions(cell).items():
        folder = _local_folder(version, tmp_path)
        meta, rows = read_version(folder)  # checks every digest, hash and the version id as format.md says
        where = f"{cell.id} {what}"
        assert rows.column("__key__").to_pylist() == [r["__key__"] for r in model], where
        decoded = [decode(meta, rows, i) for i in range(rows.num_rows)]
        assert_rows(version.features, decoded, model, f"{where} format.md reader")
        facade = ArrowBackend.from_meta(
            read_sharded_cache_meta(folder)
        )  # stable-datasets' ArrowBackend names over our reader
        assert_rows(version.features, facade.table.to_pylist(), model, f"{where} stable_explore.backend")
        seed = stable_datasets_read(folder)
        if seed is not None:  # a version stable-datasets' reader reads must read right
            assert_rows(version.features, seed.to_pylist(), model, f"{where} stable-datasets format-1 reader")
        else:
            assert what != "built", f"{where}: a plain build must stay readable by stable-datasets' reader"


@pytest.mark.parametrize("cell", cell_params(LABELLED), indirect=True)
def test_a_relabelled_version_reads_right_or_is_refused_by_the_seed_reader(cell: Cell, tmp_path: Path) -> None:
    label = cell.fset.label_column
    assert label is not None
    relabelled = cell.ds.relabel({0: "dog", 13: "bird"}, column=label).save(message="readers", progress=False)
    model = [dict(r) for r in cell.model()]
    model[0][label], model[13][label] = "dog", "bird"
    folder = _local_folder(relabelled, tmp_path)
    meta, rows = read_version(folder)
    assert_rows(relabelled.features, [decode(meta, rows, i) for i in range(rows.num_rows)], model, "format.md")
    seed = stable_datasets_read(folder)
    if seed is not None:  # refusing the version is right too; reading it, it must read the new labels
        assert_rows(relabelled.features, seed.to_pylist(), model, f"{cell.id} stable-datasets format-1")
