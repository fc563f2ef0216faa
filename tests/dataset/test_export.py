"""Exports write through one temp-file-then-rename path: concurrent exports of one file never clobber each other."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow.parquet as pq

import stable_explore as se


def test_two_parquet_exports_to_one_path_leave_one_whole_file(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"), text=se.Value("string"))
    rows = [{"x": i, "text": "t" * (i % 50)} for i in range(20_000)]
    ds = se.build(rows, features, name="n", home=tmp_path / "home", progress=False)
    target = tmp_path / "out" / "n.parquet"
    errors: list[BaseException] = []

    def export(view: se.CachedDataset) -> None:
        try:
            view.to_parquet(target, rows_per_group=1000)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=export, args=(v,)) for v in (ds, ds[:10_000])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    written = pq.read_table(target)
    assert written.num_rows in (20_000, 10_000)  # one export or the other, whole
    assert written.column("x").to_pylist() == list(range(written.num_rows))
    assert [p.name for p in target.parent.iterdir()] == ["n.parquet"], "no temp file is left behind"


def test_image_paths_are_written_once_per_version_and_column(tmp_path: Path, jpegs: list[bytes]) -> None:
    features = se.Features(image=se.Image())
    ds = se.build([{"image": j} for j in jpegs[:5]], features, name="imgs", home=tmp_path, progress=False)
    first = ds.to_pandas(images="path")["image"].tolist()
    again = ds[2:].to_pandas(images="path")["image"].tolist()
    assert first[2:] == again
    assert [Path(p).read_bytes() for p in first] == jpegs[:5]
    folder = Path(first[0]).parent
    assert sorted(p.name for p in folder.iterdir()) == [Path(p).name for p in first]


def test_integer_columns_with_nulls_keep_every_value_in_pandas(tmp_path: Path) -> None:
    # a float64 column (Arrow's default for ints with nulls) turns 2**63 - 1 into 2**63
    features = se.Features(big=se.Value("int64"), small=se.Value("uint8"), whole=se.Value("uint64"))
    rows = [{"big": 2**63 - 1, "small": 7, "whole": 2**64 - 1}, {"big": None, "small": None, "whole": 1}]
    frame = se.build(rows, features, name="ints", home=tmp_path, progress=False).to_pandas()
    assert frame["big"].tolist()[0] == 2**63 - 1
    assert frame["big"].isna().tolist() == [False, True]
    assert str(frame["big"].dtype) == "Int64"
    assert str(frame["small"].dtype) == "UInt8"
    assert frame["whole"].dtype == "uint64"  # no nulls: the plain numpy dtype, as before
    assert frame["whole"].tolist() == [2**64 - 1, 1]
