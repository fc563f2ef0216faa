"""The confusion-matrix widget in Python: what it draws, what a click shows, and where it sends the rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from stable_explore.evaluation import DetectionResult
from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget
from tests.widgets.commands import invoke

NAMES = ["cat", "dog", "<b>fox</b>"]  # a name that would be markup if the page ever used innerHTML


@pytest.fixture
def evaluated(tmp_path: Path) -> tuple[se.CachedDataset, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    true = rng.integers(0, 3, 60)
    pred = np.where(rng.random(60) < 0.7, true, rng.integers(0, 3, 60))
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES), pred=se.ClassLabel(names=NAMES))
    rows = [
        (f"k{i:02d}", {"image": np.full((8, 8), 4 * i, np.uint8), "label": int(t), "pred": int(p)})
        for i, (t, p) in enumerate(zip(true, pred, strict=True))
    ]
    return se.build(rows, features, name="cm", home=tmp_path, progress=False), true, pred


def test_the_widget_draws_sklearns_matrix_and_names(evaluated: tuple[se.CachedDataset, np.ndarray, np.ndarray]) -> None:
    from sklearn.metrics import confusion_matrix

    ds, true, pred = evaluated
    r = se.evaluate(ds, predictions="pred", ground_truth="label")
    matrix = r.widget()
    assert isinstance(matrix, ConfusionMatrixWidget)
    assert matrix.names == NAMES
    assert matrix.counts == confusion_matrix(true, pred, labels=[0, 1, 2]).tolist()
    assert matrix.title == f"pred: accuracy {np.mean(true == pred):.4f} over 60 rows"
    assert matrix.active_cell == []


def test_a_click_on_a_cell_filters_the_browser_to_exactly_its_rows(
    evaluated: tuple[se.CachedDataset, np.ndarray, np.ndarray],
) -> None:
    ds, true, pred = evaluated
    browser = ds.browse(page_size=96)
    seen: list[tuple[list[int], str]] = []
    r = se.evaluate(ds, predictions="pred", ground_truth="label")
    matrix = r.widget(browser=browser)
    matrix.on_show = lambda rows, title: seen.append((rows, title))
    assert invoke(matrix, "cell", {"true": 1, "pred": 2}) == ({"type": "ok"}, [])  # what a click sends
    expected = np.flatnonzero((true == 1) & (pred == 2)).tolist()
    assert expected  # the seed gives this off-diagonal cell some rows
    assert matrix.active_cell == [1, 2]
    assert matrix.shown_rows == expected
    assert browser.page_rows().tolist() == expected
    title = f"{len(expected)} rows labelled dog, predicted <b>fox</b>"
    assert browser.subset == title
    assert seen == [(expected, title)]
    # the diagonal, then a cell no row is in: the grid follows, empty
    invoke(matrix, "cell", {"true": 0, "pred": 0})
    assert browser.page_rows().tolist() == np.flatnonzero((true == 0) & (pred == 0)).tolist()
    counts = np.array(matrix.counts)
    empty = np.argwhere(counts == 0)
    if len(empty):
        t, p = (int(v) for v in empty[0])
        invoke(matrix, "cell", {"true": t, "pred": p})
        assert browser.page_rows().tolist() == []


def test_a_click_on_a_class_name_shows_sklearns_figures(
    evaluated: tuple[se.CachedDataset, np.ndarray, np.ndarray],
) -> None:
    from sklearn.metrics import precision_recall_fscore_support

    ds, true, pred = evaluated
    matrix = se.evaluate(ds, predictions="pred", ground_truth="label").widget()
    assert invoke(matrix, "class", {"index": 2}) == ({"type": "ok"}, [])
    precision, recall, f1, support = precision_recall_fscore_support(true, pred, labels=[0, 1, 2], zero_division=0)
    figures = matrix.class_figures
    assert figures["name"] == "<b>fox</b>"
    assert figures["precision"] == pytest.approx(precision[2])
    assert figures["recall"] == pytest.approx(recall[2])
    assert figures["f1"] == pytest.approx(f1[2])
    assert figures["support"] == support[2]
    assert figures["predicted"] == int((pred == 2).sum())


def test_a_bad_click_is_said_on_the_page(evaluated: tuple[se.CachedDataset, np.ndarray, np.ndarray]) -> None:
    ds, _, _ = evaluated
    matrix = se.evaluate(ds, predictions="pred", ground_truth="label").widget()
    reply, _ = invoke(matrix, "cell", {"true": 0, "pred": 7})
    assert reply["message"] == matrix.status
    assert "pred=7 is outside 0..2" in matrix.status
    assert matrix.active_cell == []
    with pytest.raises(InvalidOptionError, match="true='wolf' is not a class"):
        matrix.show("wolf", "cat")


@pytest.fixture
def detected(tmp_path: Path) -> se.CachedDataset:
    boxes = se.Boxes(names=["cat", "<b>dog</b>"])
    features = se.Features(image=se.Image(), objects=boxes, predictions=boxes)
    a, b, c = [0, 0, 10, 10], [40, 40, 20, 20], [80, 0, 10, 10]
    rows = [
        {"objects": [{"bbox": a, "category": "cat"}], "predictions": [{"bbox": a, "category": "cat", "score": 0.9}]},
        {"objects": [{"bbox": a, "category": "cat"}], "predictions": [{"bbox": a, "category": 1, "score": 0.8}]},
        {"objects": [{"bbox": b, "category": 1}], "predictions": []},
        {"objects": [], "predictions": [{"bbox": c, "category": "cat", "score": 0.7}]},
        {"objects": [{"bbox": b, "category": 1}], "predictions": [{"bbox": b, "category": 1, "score": 0.6}]},
    ]
    full = [(f"d{i}", {"image": np.full((8, 8), 30 * i, np.uint8), **row}) for i, row in enumerate(rows)]
    return se.build(full, features, name="det", home=tmp_path, progress=False)


def test_a_detectors_matrix_counts_boxes_with_a_background_row_and_column(detected: se.CachedDataset) -> None:
    r = se.evaluate(detected, predictions="predictions", ground_truth="objects")
    assert isinstance(r, DetectionResult)
    # a cat found; a cat called a dog; a dog missed; a cat on nothing; a dog found
    assert r.confusion_matrix.tolist() == [[1, 1, 0], [0, 1, 1], [1, 0, 0]]
    matrix = r.widget()
    assert matrix.kind == "detection"
    assert matrix.names == ["cat", "<b>dog</b>", "background"]
    assert matrix.counts == r.confusion_matrix.tolist()
    assert [e["name"] for e in matrix.ap_table] == ["cat", "<b>dog</b>"]
    assert matrix.ap_table[0]["ap"] == pytest.approx(r.per_class_ap()["cat"])
    assert matrix.ap_table[1]["ap50"] == pytest.approx(r.per_class_ap(iou=0.5)["<b>dog</b>"])
    assert matrix.title.startswith(f"predictions: mAP {r.map:.4f}, mAP50 {r.map50:.4f} over 5 images")


def test_a_click_on_a_detection_cell_shows_its_images_and_a_class_its_curve(detected: se.CachedDataset) -> None:
    r = se.evaluate(detected, predictions="predictions", ground_truth="objects")
    assert isinstance(r, DetectionResult)
    browser = detected.browse(page_size=24)
    matrix = r.widget(browser=browser)
    assert invoke(matrix, "cell", {"true": 2, "pred": 0}) == ({"type": "ok"}, [])
    assert matrix.shown_rows == [3] == r.confusion_rows("background", "cat").tolist()
    assert browser.page_rows().tolist() == [3]
    assert browser.subset == "1 image with a false cat (on no ground-truth box)"
    invoke(matrix, "cell", {"true": 1, "pred": 2})
    assert browser.page_rows().tolist() == [2]
    assert browser.subset == "1 image with a missed <b>dog</b>"
    invoke(matrix, "cell", {"true": 0, "pred": 1})
    assert browser.page_rows().tolist() == [1]
    invoke(matrix, "cell", {"true": 1, "pred": 1})
    assert browser.page_rows().tolist() == [4]

    assert invoke(matrix, "class", {"index": 0}) == ({"type": "ok"}, [])
    figures = matrix.class_figures
    curve = r.precision_recall("cat")
    assert figures["name"] == "cat"
    assert figures["ap"] == pytest.approx(r.per_class_ap()["cat"])
    assert figures["curve"]["recall"] == pytest.approx(curve["recall"].tolist())
    assert figures["curve"]["precision"] == pytest.approx(curve["precision"].tolist())
    assert (figures["tp"], figures["fp"], figures["fn"]) == (1, 1, 1)
    reply, _ = invoke(matrix, "class", {"index": 2})
    assert "the background is not a class" in reply["message"]


def test_the_detection_matrix_accounts_for_every_box_that_counts(tmp_path: Path) -> None:
    from stable_explore.testing.coco_scenes import coco_scene, scene_rows

    names = ["c1", "c3", "c7", "c12"]
    truths, found, _, _ = coco_scene(images=40, seed=9)
    features = se.Features(objects=se.Boxes(names=names), predictions=se.Boxes(names=names))
    ds = se.build(scene_rows(truths, {"predictions": found}, names), features, name="s", home=tmp_path, progress=False)
    r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
    assert isinstance(r, DetectionResult)
    m = r.confusion_matrix
    boxes = r.boxes()
    predicted = boxes[(boxes["side"] == "prediction") & (boxes["outcome"] != "ignored")]
    truth = boxes[(boxes["side"] == "truth") & (boxes["outcome"] != "ignored")]
    assert m[:-1, :].sum() == len(truth)  # every ground-truth box that counts, once
    assert m[:, :-1].sum() == len(predicted)  # every prediction that counts, once
    assert np.trace(m[:-1, :-1]) == (predicted["outcome"] == "tp").sum()
    confused = m[:-1, :-1].sum() - np.trace(m[:-1, :-1])
    assert confused > 0  # the scene has predictions of the wrong class on missed boxes
    assert m[-1, :-1].sum() + confused == (predicted["outcome"] == "fp").sum()
    for t, p in [(0, 1), (len(names), 2), (3, len(names))]:
        rows = r.confusion_rows(t, p).tolist()
        assert (len(rows) > 0) == (m[t, p] > 0)
    # the kept evaluation gives the same matrix
    again = se.evaluate(ds, predictions="predictions", ground_truth="objects")
    assert isinstance(again, DetectionResult)
    assert again.cache_info.startswith("reused")
    np.testing.assert_array_equal(again.confusion_matrix, m)
