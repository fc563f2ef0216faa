"""Box by box histograms in the browser, without a page: what each Boxes column's bars count (numpy's
histogram of the boxes' areas, aspects, scores, boxes per image and classes over the rows kept), and what
a click on a bar keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from tests.widgets.commands import invoke
from tests.widgets.test_browser_overlays import _coco


def _measures(ds: se.CachedDataset, column: str) -> dict[str, list[tuple[int, float]]]:
    """(row, value) of every box: area, aspect, score and class; and (row, boxes) per image."""
    out: dict[str, list[tuple[int, float]]] = {"area": [], "aspect": [], "score": [], "class": [], "count": []}
    for row in range(len(ds)):
        boxes = ds[row][column]
        out["count"].append((row, len(boxes["bbox"])))
        for (_, _, w, h), score, cls in zip(boxes["bbox"], boxes["score"], boxes["category"], strict=True):
            out["area"].append((row, w * h))
            out["aspect"].append((row, w / h))
            out["class"].append((row, cls))
            if score is not None:
                out["score"].append((row, score))
    return out


def test_each_boxes_column_has_numpy_s_histograms_over_the_rows_kept(tmp_path: Path) -> None:
    path, images_dir, results, _ = _coco(tmp_path)
    ds = se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)
    browser = ds.browse(page_size=24)
    assert set(browser.box_histograms) == {"objects", "predictions"}
    assert "score" not in browser.box_histograms["objects"]  # ground truth has no scores
    for column in ("objects", "predictions"):
        made = browser.box_histograms[column]
        found = _measures(ds, column)
        for what in ("area", "aspect", "score", "count"):
            if what not in made:
                continue
            values = np.array([v for _, v in found[what]])
            counts, _ = np.histogram(values, bins=16, range=(values.min(), values.max()))
            assert made[what]["counts"] == counts.tolist(), (column, what)
        classes = [c for _, c in found["class"]]
        assert made["classes"] == np.bincount(classes, minlength=3).tolist()
    # over the rows a filter keeps: only their boxes, the bins where they were
    browser.where("width", min=100)
    kept = set(browser.page_rows().tolist())
    assert 0 < len(kept) < len(ds)
    found = _measures(ds, "objects")
    whole = np.array([v for _, v in found["area"]])
    values = np.array([v for r, v in found["area"] if r in kept])
    counts, _ = np.histogram(values, bins=16, range=(whole.min(), whole.max()))
    assert browser.box_histograms["objects"]["area"]["counts"] == counts.tolist()


def test_a_click_on_a_bar_keeps_the_images_with_such_a_box(tmp_path: Path) -> None:
    path, images_dir, results, _ = _coco(tmp_path)
    ds = se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)
    browser = ds.browse(page_size=24)
    found = _measures(ds, "objects")
    invoke(browser, "where_box_bin", {"column": "objects", "what": "classes", "bin": 2})
    dogs = sorted({r for r, c in found["class"] if c == 2})
    assert browser.page_rows().tolist() == dogs
    # then the smallest area's bar: the images with a dog in it
    edges = browser.box_histograms["objects"]["area"]["edges"]
    invoke(browser, "where_box_bin", {"column": "objects", "what": "area", "bin": 0})
    small = {r for (r, a), (_, c) in zip(found["area"], found["class"], strict=True) if a < edges[1] and c == 2}
    assert browser.page_rows().tolist() == sorted(small)
    assert browser.field_filters[0]["class_name"] == "dog"
    # boxes per image: its bar replaces the box filter; the last bar is closed
    top = max(n for _, n in found["count"])
    invoke(browser, "where_box_bin", {"column": "objects", "what": "count", "bin": 15})
    assert browser.page_rows().tolist() == [r for r, n in found["count"] if n == top]
    assert "class" not in browser.field_filters[0]
    with pytest.raises(InvalidOptionError, match="no 'score' histogram of 'objects'"):
        browser.where_box_bin("objects", "score", 0)
