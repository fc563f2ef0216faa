"""One word, one thing: a shard is a file, a segment is a run of rows of one shard, in every API and in the browser."""

from __future__ import annotations

from pathlib import Path

import pyarrow.ipc as ipc
import pytest

import stable_explore as se


@pytest.fixture
def edited(tmp_path: Path) -> se.CachedDataset:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), x=se.Value("int64"))
    rows = [(f"k{i:05d}", {"label": "a", "x": i}) for i in range(3000)]
    ds = se.build(rows, features, name="e", shard_size="16KB", batch_size=1000, home=tmp_path, progress=False)
    assert ds.num_shards > 2
    # a new value in the middle of the first shard: its other rows are reused where they are
    return ds.set(500, "x", -500).drop([2999]).save(message="edit", progress=False)


def test_shards_are_files_and_segments_are_runs(edited: se.CachedDataset) -> None:
    meta = edited.cache_meta
    assert edited.num_shards == meta.num_shards == len(meta.shard_filenames)
    assert edited.num_segments == len(meta.segments) > edited.num_shards  # the edit split a shard into runs
    assert sum(edited.shard_row_counts) == len(edited) == 2999
    assert len(edited.shard_row_counts) == edited.num_shards


def test_shard_of_names_the_file_and_row_where_a_row_is_stored(edited: se.CachedDataset) -> None:
    keys = edited.keys()
    files = {}
    for i in (0, 499, 500, 501, 1500, len(edited) - 1):
        shard, row = edited.shard_of(i)
        if shard not in files:
            files[shard] = ipc.open_file(str(edited.cache_meta.shard_paths[shard])).read_all()
        assert files[shard].column("__key__")[row].as_py() == keys[i]
    assert edited.shard_ids().tolist()[500] == edited.shard_of(500)[0]


def test_the_browser_filters_by_shard_file(edited: se.CachedDataset) -> None:
    pytest.importorskip("anywidget")
    browser = edited.browse(page_size=24)
    entries = {entry["index"]: entry for entry in browser.shards}
    assert sum(entry["rows"] for entry in entries.values()) == len(edited)
    ids = edited.shard_ids()
    for shard, entry in entries.items():
        browser.shard = shard
        assert len(browser.page_rows(0)) == min(24, entry["rows"])
        assert set(ids[browser.page_rows(0)].tolist()) == {shard}
        if "start" in entry:
            assert entry["stop"] - entry["start"] == entry["rows"]
