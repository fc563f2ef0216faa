"""Issue 22 #11: reads let go of the shards' mapped pages as they pass them; the data stays intact.

Resident file pages are read from ``/proc/self/status`` (``RssFile``): what the kernel counts in this
process's RSS for mapped files. The shard here is 24 MB of incompressible bytes, and reads release
every 2 MB (the limit set small, so the test is quick); without releases a full scan keeps all 24 MB.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import Features, Value
from stable_explore.storage.kept import forget
from stable_explore.storage.read import resident

ROWS = 6000
ROW_BYTES = 4096
MB = 1024 * 1024

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS figures come from Linux's /proc")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> se.CachedDataset:
    rows = ({"blob": os.urandom(ROW_BYTES), "n": i} for i in range(ROWS))
    home = tmp_path_factory.mktemp("resident")
    ds = se.build(rows, Features(blob=Value("binary"), n=Value("int64")), name="big", home=home, progress=False)
    assert ds.num_shards == 1  # one mapped file
    assert ds.nbytes > 20 * MB
    return ds


def _rows(ds: se.CachedDataset) -> Iterator[Any]:
    yield from ds


def _batches(ds: se.CachedDataset) -> Iterator[Any]:
    yield from ds.iter(batch_size=500)


def _arrow_batches(ds: se.CachedDataset) -> Iterator[Any]:
    for table in ds.with_format("arrow").iter(batch_size=500):
        yield table.column("blob").to_pylist()  # zero-copy tables: the user's reading touches the pages


def _epoch(ds: se.CachedDataset) -> Iterator[Any]:
    pytest.importorskip("torch", reason="to_iterable gives a torch IterableDataset (the torch extra)")
    yield from ds.to_iterable()


def _view_rows(ds: se.CachedDataset) -> Iterator[Any]:
    yield from ds.select(np.arange(0, len(ds), 2))  # a view's rows, ascending


SCANS: dict[str, Callable[[se.CachedDataset], Iterator[Any]]] = {
    "for row in ds": _rows,
    "a view's rows": _view_rows,
    "ds.iter()": _batches,
    "ds.iter() arrow": _arrow_batches,
    "to_iterable()": _epoch,
}


def _peak_resident_file_mb(ds: se.CachedDataset, scan: Callable[[se.CachedDataset], Iterator[Any]]) -> float:
    """The most the mapped file pages of this process grew during one full scan, sampled every item."""
    forget("shard maps")  # a fresh map: nothing of the shard resident before the scan
    resident.release_pages()
    before = _status_kb("RssFile")
    peak = before
    for _ in scan(ds):
        peak = max(peak, _status_kb("RssFile"))
    return (peak - before) / 1024


@pytest.mark.parametrize("name", list(SCANS))
def test_a_full_scan_keeps_only_the_pages_of_its_last_few_megabytes_resident(
    big: se.CachedDataset, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan = SCANS[name]
    monkeypatch.setattr(resident, "RELEASE_EVERY_BYTES", 10**12)  # no release: every page stays (the check can fail)
    kept = _peak_resident_file_mb(big, scan)
    assert kept > 20, f"{name}: without releases the scan should keep the shard's 24 MB, kept {kept:.1f} MB"
    monkeypatch.setattr(resident, "RELEASE_EVERY_BYTES", 2 * MB)
    bounded = _peak_resident_file_mb(big, scan)
    assert bounded < 8, f"{name}: a scan releasing every 2 MB kept {bounded:.1f} MB of mapped pages"


def test_rows_read_across_releases_are_intact_and_a_held_batch_stays_valid(
    big: se.CachedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident, "RELEASE_EVERY_BYTES", 1 * MB)
    held = next(iter(big.with_format("arrow").iter(batch_size=100)))
    expected = held.to_pydict()
    digest = hashlib.sha256()
    for row in big:
        digest.update(row["blob"])
    assert resident.release_pages() >= big.nbytes - MB  # the map is live and was advised
    again = hashlib.sha256()
    for batch in big.iter(batch_size=700):
        for blob in batch["blob"]:
            again.update(blob)
    assert digest.hexdigest() == again.hexdigest()
    assert held.to_pydict() == expected  # its pages came back from the file with the same bytes
    assert [row["n"] for row in big.select([0, 2999, 5999])] == [0, 2999, 5999]


def test_a_full_scan_holds_no_more_than_a_few_batches_of_arrow_memory(big: se.CachedDataset) -> None:
    start = pa.total_allocated_bytes()
    peak = start
    for count, _ in enumerate(big.with_format("python")):
        if count % 100 == 0:
            peak = max(peak, pa.total_allocated_bytes())
    # rows are read 1,000 at a time (4 MB of blobs here): a scan that kept its batches would reach 24 MB
    assert (peak - start) / MB < 10, f"Arrow memory grew by {(peak - start) / MB:.1f} MB during the scan"


def test_a_sparse_read_counts_the_pages_around_its_rows_not_the_span_between_them() -> None:
    from stable_explore.storage.read.resident import FAULT_AROUND_BYTES, sparse_read_bytes

    # 10 relabelled rows spread over a 30 MB shard: ten windows of pages, where the span counted 30 MB, as if
    # the save had read the whole shard
    assert sparse_read_bytes(5, 99_990, 10, 300.0) == 10 * FAULT_AROUND_BYTES
    # rows side by side count their span, and large rows their own bytes
    assert sparse_read_bytes(100, 199, 100, 300.0) == 100 * 300.0
    assert sparse_read_bytes(0, 1_000, 3, 1_000_000.0) == 3 * 1_000_000.0
