"""The confusion-matrix widget in Python: what it draws, what a click shows, and where it sends the rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
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
