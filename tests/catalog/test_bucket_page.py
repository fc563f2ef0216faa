"""A bucket's first page fetches the page's bytes, not its record batch's (a real SeaweedFS on loopback).

Rows of a few columns are cut from a record batch by byte range (``storage/backends/remote_ranges``);
what is handed out is still checked: the small columns whole against their batch digests, the
rows' cells by their row hashes. These tests bound the bytes, and damage a byte inside and outside
the ranges a page reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.ipc as ipc
import pytest

import stable_explore as se
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.backends.object import ObjectStore
from stable_explore.storage.backends.read_cache import CACHE_ENV
from stable_explore.storage.backends.remote_file import FETCHED
from stable_explore.storage.format.ipc_layout import FILE_TAIL, footer_blocks, footer_length
from stable_explore.storage.kept import forget
from tests.widgets.commands import invoke

pytest.importorskip("obstore")
ROWS = 3000
BATCH = 1000
PAGE = 48


def _features() -> se.Features:
    return se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog", "bird"]), score=se.Value("float32"))


def _rows(jpegs: list[bytes]) -> list[tuple[str, dict[str, object]]]:
    return [(f"pet-{i:05d}", {"image": jpegs[i % len(jpegs)], "label": i % 3, "score": i / 4}) for i in range(ROWS)]


def _fresh_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A new read cache and no checks remembered: as a process on a machine that never read this version."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / name))
    forget()
    FETCHED.reset()


def _build(bucket: str, jpegs: list[bytes]) -> se.CachedDataset:
    return se.build(_rows(jpegs), _features(), name="pets", home=bucket, batch_size=BATCH, progress=False)


def test_a_cold_first_page_fetches_about_its_images_not_its_batch(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anywidget")
    rows = _rows(jpegs)
    ds = _build(bucket, jpegs)
    assert ds.num_shards == 1
    page_images = sum(len(row["image"]) for _, row in rows[:PAGE])  # type: ignore[arg-type]
    batch_images = sum(len(row["image"]) for _, row in rows[:BATCH])  # type: ignore[arg-type]
    _fresh_machine(tmp_path, monkeypatch, "cold")

    browser = se.load(f"{bucket}/pets").browse(page_size=PAGE)
    assert FETCHED.bytes == 0, "opening the browser reads no column of a bucket's version"
    content, buffers = browser.page_message(0)
    fetched = FETCHED.bytes
    assert len(buffers) == PAGE
    assert [cell["key"] for cell in content["cells"]] == [f"pet-{i:05d}" for i in range(PAGE)]
    assert [cell["label"] for cell in content["cells"]] == [i % 3 for i in range(PAGE)]
    # the footer (the file's last 16 KiB at most), the page's cells, and the batch's small columns checked
    # whole (keys, row hashes, labels)
    assert fetched <= 2 * page_images + 16 * 1024, (fetched, page_images)
    assert fetched < batch_images / 4, "the page cost a fraction of its record batch"

    # the same page in a new handle (or another process on this machine) is served by the read cache
    FETCHED.reset()
    se.load(f"{bucket}/pets").browse(page_size=PAGE).page_message(0)
    assert FETCHED.bytes == 0


def test_label_counts_and_number_ranges_come_after_the_page(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anywidget")
    _build(bucket, jpegs)
    _fresh_machine(tmp_path, monkeypatch, "cold")
    browser = se.load(f"{bucket}/pets").browse(page_size=PAGE)
    assert browser.label_counts == []  # the page shows "…" on the chips until the column is read
    score = next(f for f in browser.fields if f["name"] == "score")
    assert "min" not in score
    reply, buffers = invoke(browser, "refresh")
    assert reply["type"] == "page"
    assert len(buffers) == PAGE
    assert browser.label_counts == [ROWS // 3] * 3  # read after the reply went
    score = next(f for f in browser.fields if f["name"] == "score")
    assert (score["min"], score["max"]) == (0.0, (ROWS - 1) / 4)
    assert sum(browser.histograms["score"]) == ROWS

    browser.label_filter = [1]  # a filter by label reads the column at once
    assert browser.num_rows == ROWS // 3


def test_scattered_takes_cut_rows_from_many_batches_and_match_a_local_copy(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _build(bucket, jpegs)
    local = se.build(_rows(jpegs), _features(), name="pets", home=tmp_path / "local", batch_size=BATCH, progress=False)
    assert local.version == ds.version
    rng = np.random.default_rng(7)
    for columns in (None, ["image"], ["label", "__key__"], ["score", "image"]):
        _fresh_machine(tmp_path, monkeypatch, f"take-{columns}")
        picked = rng.choice(ROWS, 200, replace=True)  # repeats and any order
        remote = se.load(f"{bucket}/pets").backend.take(picked, columns=columns)
        assert remote.equals(local.backend.take(picked, columns=columns)), columns
        assert FETCHED.bytes < ds.nbytes / 2, columns


def _damage(bucket: str, ds: se.CachedDataset, tmp_path: Path, row: int) -> None:
    """Flip one byte inside row ``row``'s image in the stored shard (the metadata still describes the good one)."""
    store = ObjectStore(bucket)
    key = f"pets/versions/{ds.version}/{ds.cache_meta.shard_filenames[0]}"
    copy = tmp_path / "shard.arrow"
    store.get_file(key, copy)
    good = ipc.open_file(copy).get_batch(row // BATCH).column("image")
    data = bytearray(copy.read_bytes())
    # the image's data buffer is the batch body's only buffer holding these bytes at their offset
    buffer = good.buffers()[2]
    start = int(np.frombuffer(good.buffers()[1], dtype="<i8")[row % BATCH])
    needle = buffer.to_pybytes()[: start + 64]
    tail = bytes(data[-FILE_TAIL:])
    blocks = footer_blocks(bytes(data[-FILE_TAIL - footer_length(tail) : -FILE_TAIL]))
    body = bytes(data).find(needle, blocks[row // BATCH].body_offset)
    assert body > 0
    data[body + start + 10] ^= 0xFF
    copy.write_bytes(bytes(data))
    damaged = ipc.open_file(copy).get_batch(row // BATCH).column("image")
    assert damaged[row % BATCH] != good[row % BATCH]
    assert damaged[row % BATCH - 1] == good[row % BATCH - 1]
    assert damaged[row % BATCH + 1] == good[row % BATCH + 1]
    store.put_file(key, copy)


def test_a_damaged_byte_in_a_page_row_is_caught_and_other_rows_still_read(
    bucket: str, jpegs: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(jpegs)
    ds = _build(bucket, jpegs)
    _damage(bucket, ds, tmp_path, row=1205)
    _fresh_machine(tmp_path, monkeypatch, "damaged")
    fresh = se.load(f"{bucket}/pets")
    good = fresh.backend.take(np.arange(0, 48), columns=["image"])  # the damage is elsewhere: these rows read
    assert good.column("image").to_pylist() == [row["image"] for _, row in rows[:48]]
    with pytest.raises(CacheCorruptionError, match=r"record batch 1, column 'image' \(rows 1000-1999") as caught:
        fresh.backend.take(np.arange(1200, 1248), columns=["image"])
    assert "pets/versions" in str(caught.value)
    with pytest.raises(CacheCorruptionError, match="record batch 1, column 'image'"):
        fresh.backend.take([1205], columns=["image"])  # refused again, never handed out
