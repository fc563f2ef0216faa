"""The browser over a large version: its first page before anything of one entry per row.

The rows shown stay an implicit range until a filter, a sort or a subset applies; the page's rows,
keys, labels and shards are found for the page's rows only; whole columns (label counts, number
ranges, histograms) are read just after the first page has gone. Measured with tracemalloc on a
real version of 2M tiny rows: an array of every row's position alone would be 16 MB.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import stable_explore as se
from stable_explore import CachedDataset
from stable_explore.widgets._state import LATER_ROWS

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from tests.widgets.commands import invoke

ROWS = 2_000_000
PAGE = 48
CLASSES = 10
FEATURES = se.Features(label=se.ClassLabel(names=[f"c{i}" for i in range(CLASSES)]), score=se.Value("float32"))


def _score(rows: np.ndarray) -> np.ndarray:
    return ((rows * 7919) % 1000).astype(np.float32) / 4  # 0 .. 249.75, not in row order


def _batches() -> list[pa.RecordBatch]:
    out = []
    for start in range(0, ROWS, 500_000):
        rows = np.arange(start, min(ROWS, start + 500_000))
        out.append(
            pa.record_batch(
                {
                    "__key__": pa.array([f"r{i:07d}" for i in rows.tolist()]),
                    "label": pa.array(rows % CLASSES, pa.int64()),
                    "score": pa.array(_score(rows)),
                }
            )
        )
    return out


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> CachedDataset:
    assert ROWS >= LATER_ROWS
    home = tmp_path_factory.mktemp("large")
    ds = se.build(_batches(), FEATURES, name="large", home=home, shard_size="8MB", progress=False)
    assert ds.num_shards > 3
    return ds


def _warm(tmp_path: Path) -> None:
    """One browser over a tiny version first: the imports and caches of a first browser are not the large one's."""
    small = se.build(_batches()[0].slice(0, 100), FEATURES, name="small", home=tmp_path, progress=False)
    small.browse(page_size=PAGE).page_message(0)


def _first_page_traced(ds: CachedDataset) -> tuple[Any, dict[str, Any], int]:
    """(browser, its first page's message, the peak of memory Python allocated while opening it)."""
    tracemalloc.start()
    try:
        browser = ds.browse(page_size=PAGE)
        content, _ = browser.page_message(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return browser, content, peak


def test_the_first_page_of_2m_rows_makes_nothing_of_one_entry_per_row(large: CachedDataset, tmp_path: Path) -> None:
    _warm(tmp_path)
    browser, content, peak = _first_page_traced(large)
    # an int64 per row is 16 MB, a bool per row 2 MB: the page and its shard's footer cost less than half a byte a row
    assert peak < ROWS // 2, f"peak {peak / 2**20:.1f} MB before the first page of {ROWS:,} rows"
    assert [cell["row"] for cell in content["cells"]] == list(range(PAGE))
    assert [cell["key"] for cell in content["cells"]] == [f"r{i:07d}" for i in range(PAGE)]
    assert [cell["label"] for cell in content["cells"]] == [i % CLASSES for i in range(PAGE)]
    assert browser.num_rows == ROWS
    assert browser.num_pages == -(-ROWS // PAGE)
    assert browser.label_counts == []  # the chips show "…" until the page has gone


def test_counts_ranges_and_histograms_come_just_after_the_first_page(large: CachedDataset) -> None:
    browser = large.browse(page_size=PAGE)
    score = next(f for f in browser.fields if f["name"] == "score")
    assert "min" not in score
    reply, _ = invoke(browser, "refresh")
    assert reply["type"] == "page"
    assert len(reply["cells"]) == PAGE
    assert browser.label_counts == [ROWS // CLASSES] * CLASSES
    score = next(f for f in browser.fields if f["name"] == "score")
    assert (score["min"], score["max"]) == (0.0, 249.75)
    counts = browser.histograms["score"]
    assert sum(counts) == ROWS
    scores = _score(np.arange(ROWS))
    edges = np.asarray(score["edges"])
    assert counts[0] == int(((scores >= edges[0]) & (scores < edges[1])).sum())
    assert counts[-1] == int(((scores >= edges[-2]) & (scores <= edges[-1])).sum())
    invoke(browser, "where_bin", {"column": "score", "bin": 3})  # the very rows the bar counts
    assert browser.num_rows == counts[3]


def test_paging_filters_sort_and_selection_give_the_right_rows(large: CachedDataset) -> None:
    browser = large.browse(page_size=PAGE)
    last = browser.num_pages - 1
    browser.page = last
    assert browser.page_rows().tolist() == list(range(last * PAGE, ROWS))
    content, _ = browser.page_message(last)
    assert [cell["key"] for cell in content["cells"]] == [f"r{i:07d}" for i in range(last * PAGE, ROWS)]
    assert [cell["shard"] for cell in content["cells"]] == large.shard_ids(browser.page_rows()).tolist()
    assert browser.neighbour(ROWS - 1, 1) == ROWS - 1
    assert browser.neighbour(0, -1) == 0
    assert browser.neighbour(1000, 5) == 1005
    assert browser.detail_marks(123_456)["position"] == 123_456
    browser.click(10)
    browser.click(PAGE + 2, shift=True)  # a span across two pages, in the order shown
    assert list(browser.selected) == list(range(10, PAGE + 3))
    assert len(browser.view) == ROWS
    assert browser.view.base_rows()[-3:].tolist() == [ROWS - 3, ROWS - 2, ROWS - 1]

    browser.label_filter = [3]
    assert browser.num_rows == ROWS // CLASSES
    assert browser.page_rows().tolist()[:3] == [3, 13, 23]
    assert browser.detail_marks(13)["position"] == 1
    assert browser.detail_marks(14)["position"] == -1
    browser.label_filter = []

    browser.sort("score", descending=True)
    top = browser.page_rows()
    assert np.all(_score(top) == 249.75)
    assert browser.detail_marks(int(top[5]))["position"] == 5
    browser.sort()
    assert browser.page_rows().tolist() == list(range(PAGE))
    assert browser.detail_marks(ROWS - 1)["position"] == ROWS - 1

    browser.show_rows([ROWS - 1, 7, 500_000], "three")
    assert browser.page_rows().tolist() == [ROWS - 1, 7, 500_000]
    assert browser.detail_marks(7)["position"] == 1
    assert browser.detail_marks(8)["position"] == -1
    browser.show_rows(None)
    assert browser.num_rows == ROWS
    assert browser.page_rows().tolist() == list(range(PAGE))


def test_a_view_of_a_run_of_rows_opens_as_the_whole_version_does(large: CachedDataset, tmp_path: Path) -> None:
    _warm(tmp_path)
    start, stop = 500_000, 1_900_000
    view = large[start:stop]
    browser, content, peak = _first_page_traced(view)
    assert peak < ROWS // 2, f"peak {peak / 2**20:.1f} MB before the first page of a view of {stop - start:,} rows"
    assert [cell["row"] for cell in content["cells"]] == list(range(PAGE))
    assert [cell["key"] for cell in content["cells"]] == [f"r{i:07d}" for i in range(start, start + PAGE)]
    assert [cell["shard"] for cell in content["cells"]] == view.shard_ids(np.arange(PAGE)).tolist()
    ids, base = view.shard_ids(), view.base_rows()  # the slow way: every row's
    expected = [
        {"index": shard, "rows": int((ids == shard).sum()), "start": int(base[ids == shard][0]),
         "stop": int(base[ids == shard][-1]) + 1}
        for shard in np.unique(ids).tolist()
    ]  # fmt: skip
    assert browser.shards == expected
    assert sum(entry["rows"] for entry in browser.shards) == stop - start
    detail, _ = browser.detail_message(3)
    assert (detail["base_row"], detail["key"]) == (start + 3, f"r{start + 3:07d}")
    browser.page = browser.num_pages - 1
    assert browser.page_rows()[-1] == stop - start - 1
    assert browser.page_message()[0]["cells"][-1]["key"] == f"r{stop - 1:07d}"
