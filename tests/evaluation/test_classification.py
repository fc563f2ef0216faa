"""se.evaluate for classifiers: the figures equal scikit-learn's, and every number leads to its rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.evaluation import ClassificationResult, Comparison

NAMES = ["cat", "dog", "fox", "owl", "emu"]  # "emu" is never a label nor a prediction


def _labels(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    true = rng.integers(0, 4, n)
    logits = rng.normal(0, 1, (n, len(NAMES)))
    logits[np.arange(n), true] += 1.5  # a model that is right most of the time
    logits[:, 4] = -20.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return true, probs.argmax(axis=1), probs


@pytest.fixture
def scored(home: Path) -> tuple[se.CachedDataset, np.ndarray, np.ndarray, np.ndarray]:
    true, pred, probs = _labels(0)
    features = se.Features(
        label=se.ClassLabel(names=NAMES),
        pred=se.ClassLabel(names=list(reversed(NAMES))),  # another order of the same names
        probs=se.Sequence(se.Value("float64"), length=len(NAMES)),
        guess=se.Value("string"),
    )
    rows = (
        (
            f"img-{i:04d}",
            {"label": NAMES[t], "pred": NAMES[p], "probs": probs[i].tolist(), "guess": NAMES[p]},
        )
        for i, (t, p) in enumerate(zip(true, pred, strict=True))
    )
    return se.build(rows, features, name="scored", home=home, progress=False), true, pred, probs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matrix_and_report_equal_scikit_learns_with_empty_classes(seed: int) -> None:
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    true, pred, _ = _labels(seed)
    r = ClassificationResult(true, pred, NAMES)
    labels = list(range(len(NAMES)))
    np.testing.assert_array_equal(r.confusion_matrix, confusion_matrix(true, pred, labels=labels))
    precision, recall, f1, support = precision_recall_fscore_support(true, pred, labels=labels, zero_division=0)
    report = r.report()
    assert list(report.index) == NAMES
    np.testing.assert_allclose(report["precision"], precision)
    np.testing.assert_allclose(report["recall"], recall)
    np.testing.assert_allclose(report["f1"], f1)
    np.testing.assert_array_equal(report["support"], support)
    assert report.loc["emu"].tolist() == [0.0, 0.0, 0.0, 0]


def test_every_column_form_gives_the_same_figures(scored) -> None:  # type: ignore[no-untyped-def]
    from sklearn.metrics import accuracy_score, top_k_accuracy_score

    ds, true, pred, probs = scored
    by_label = se.evaluate(ds, predictions="pred")  # a ClassLabel with its names in another order
    by_probs = se.evaluate(ds, predictions="probs", ground_truth="label")
    by_names = se.evaluate(ds, predictions="guess")
    by_array = se.evaluate(ds, predictions=probs)
    for r in (by_label, by_probs, by_names, by_array):
        assert isinstance(r, ClassificationResult)
        assert r.accuracy == pytest.approx(accuracy_score(true, pred))
        np.testing.assert_array_equal(r.pred, pred)
    top2 = se.evaluate(ds, predictions="probs", top_k=2)
    assert top2.accuracy == pytest.approx(top_k_accuracy_score(true, probs, k=2, labels=range(len(NAMES))))


def test_a_cell_of_the_matrix_is_a_click_away_from_its_rows(scored) -> None:  # type: ignore[no-untyped-def]
    ds, true, pred, _ = scored
    r = se.evaluate(ds, predictions="pred")
    rows = r.rows(true="dog", pred="fox")
    assert rows.tolist() == np.flatnonzero((true == 1) & (pred == 2)).tolist()
    assert len(rows) == r.confusion_matrix[1, 2]
    pred_names = ds.features["pred"].names  # the stored index is into the column's own names
    assert all(NAMES[ds[int(i)]["label"]] == "dog" and pred_names[ds[int(i)]["pred"]] == "fox" for i in rows)
    assert r.rows(true=1).tolist() == np.flatnonzero(true == 1).tolist()
    with pytest.raises(InvalidOptionError, match="'wolf' is not a class"):
        r.rows(true="wolf")


def test_mistakes_come_most_confident_first(scored) -> None:  # type: ignore[no-untyped-def]
    ds, true, pred, probs = scored
    mistakes = se.evaluate(ds, predictions="probs").mistakes()
    wrong = np.flatnonzero(true != pred)
    assert sorted(mistakes["row"].tolist()) == wrong.tolist()
    assert mistakes["confidence"].is_monotonic_decreasing
    first = int(mistakes["row"].iloc[0])
    assert mistakes["key"].iloc[0] == f"img-{first:04d}"
    assert mistakes["confidence"].iloc[0] == pytest.approx(probs[first].max())
    assert mistakes["label_probability"].iloc[0] == pytest.approx(probs[first, true[first]])
    assert (mistakes["label"] != mistakes["predicted"]).all()


def test_rows_without_a_label_are_left_out_and_counted(home: Path) -> None:
    features = se.Features(label=se.ClassLabel(names=["a", "b"]), pred=se.ClassLabel(names=["a", "b"]))
    rows = [{"label": "a", "pred": "a"}, {"label": None, "pred": "b"}, {"label": "b", "pred": "a"}]
    r = se.evaluate(se.build(rows, features, name="partly", home=home, progress=False), predictions="pred")
    assert r.skipped == 1
    assert r.accuracy == 0.5
    assert r.confusion_matrix.sum() == 2
    assert "1 rows without a label or prediction left out" in repr(r)


def test_saved_evaluations_of_two_models_compare_row_by_row(scored) -> None:  # type: ignore[no-untyped-def]
    ds, true, pred, _ = scored
    both = se.evaluate(ds, predictions=["pred", "probs"])
    assert isinstance(both, Comparison)
    assert both.differ().empty  # the same predictions twice
    other = np.where(np.arange(len(true)) % 10 == 0, (pred + 1) % 4, pred)
    changed = ds.add_columns({"pred2": [NAMES[p] for p in other]}, progress=False)
    pair = se.evaluate(changed, predictions=["guess", "pred2"])
    differ = pair.differ()
    expected = np.flatnonzero((pred == true) != (other == true))
    assert differ["row"].tolist() == expected.tolist()
    a = pair["guess"].save(progress=False)
    b = pair["pred2"].save(progress=False)
    assert a.features["guess_correct"] == se.Value("bool")
    diff = se.compare(a, b)
    assert not diff.identical
    assert a.metadata["message"].startswith("evaluation of guess: accuracy")


def test_wrong_inputs_name_the_column_and_row(scored) -> None:  # type: ignore[no-untyped-def]
    ds, *_ = scored
    with pytest.raises(ColumnNotFoundError, match="no column 'nope' of predictions"):
        se.evaluate(ds, predictions="nope")
    with pytest.raises(ColumnNotFoundError, match="'guess' is not a ClassLabel column"):
        se.evaluate(ds, predictions="pred", ground_truth="guess")
    bad = np.zeros((len(ds), len(NAMES)))
    bad[7, 0] = 3.0
    with pytest.raises(InvalidOptionError, match=r"row 7 \(key 'img-0007'\) should hold 5 probabilities"):
        se.evaluate(ds, predictions=bad)
    with pytest.raises(InvalidOptionError, match="top_k=2 needs the model's probabilities"):
        se.evaluate(ds, predictions="pred", top_k=2)


def test_the_html_escapes_class_names(home: Path) -> None:
    names = ["<b>a</b>", "b"]
    features = se.Features(label=se.ClassLabel(names=names), pred=se.ClassLabel(names=names))
    ds = se.build([{"label": 0, "pred": 1}], features, name="esc", home=home, progress=False)
    page = se.evaluate(ds, predictions="pred")._repr_html_()
    assert "<b>a</b>" not in page
    assert "&lt;b&gt;a&lt;/b&gt;" in page
