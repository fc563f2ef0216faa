"""An evaluation in the browser (``ds.browse(evaluation=r)``), without a page: each box's outcome travels with
the page, equal to ``r.boxes()``; the evaluation's buttons show ``r.rows("fp")``, ``r.rows("fn")`` and the
most confident mistakes in order; an evaluation of other rows is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from tests.widgets.commands import invoke
from tests.widgets.test_browser_overlays import _coco


def _evaluated(tmp_path: Path) -> tuple[se.CachedDataset, object]:
    path, images_dir, results, _ = _coco(tmp_path)
    ds = se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)
    return ds, se.evaluate(ds, predictions="predictions", ground_truth="objects")


def test_each_box_carries_its_outcome_as_the_evaluation_gives_it(tmp_path: Path) -> None:
    ds, r = _evaluated(tmp_path)
    browser = ds.browse(page_size=24, evaluation=r)
    assert browser.evaluation["kind"] == "boxes"
    assert browser.evaluation["counts"] == {
        "fp": len(r.rows("fp")),
        "fn": len(r.rows("fn")),
        "mistakes": len(r.rows("fp")),
    }
    content, _ = invoke(browser, "refresh")
    boxes = r.boxes()
    seen = set()
    for cell in content["cells"]:
        mine = boxes[boxes["row"] == cell["row"]]
        outcomes = cell["overlays"]["outcomes"]
        for side, column in (("prediction", "predictions"), ("truth", "objects")):
            expected = mine[mine["side"] == side].sort_values("box")["outcome"].tolist()
            assert outcomes[column] == expected
            assert len(outcomes[column]) == len(cell["overlays"]["boxes"][column] or [])
            seen.update(expected)
    assert {"tp", "fp", "fn"} <= seen  # the scene has all three
    # the predictions column is the evaluation's: its boxes are the ones the slider thresholds
    roles = {f["name"]: f["role"] for f in browser.label_fields if f["kind"] == "boxes"}
    assert roles == {"objects": "truth", "predictions": "predictions"}


def test_the_buttons_show_the_rows_with_fp_fn_and_the_most_confident_mistakes_first(tmp_path: Path) -> None:
    ds, r = _evaluated(tmp_path)
    browser = ds.browse(page_size=24, evaluation=r)
    for what in ("fp", "fn"):
        invoke(browser, "evaluation_rows", {"what": what})
        assert browser.page_rows().tolist() == r.rows(what).tolist()
        assert browser.subset.startswith(f"rows with a false {'positive' if what == 'fp' else 'negative'}")
    invoke(browser, "evaluation_rows", {"what": "mistakes"})
    shown = browser.page_rows().tolist()
    assert sorted(shown) == r.rows("fp").tolist()
    frame = r.boxes()
    fps = frame[(frame["side"] == "prediction") & (frame["outcome"] == "fp")]
    top = [max(ds[row]["predictions"]["score"][b] for b in fps[fps["row"] == row]["box"]) for row in shown]
    assert top == sorted(top, reverse=True)
    invoke(browser, "show_all")
    assert browser.num_rows == len(ds)


def test_a_classifier_s_mistakes_come_in_its_order(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    rng = np.random.default_rng(3)
    true = rng.integers(0, 3, 40)
    probs = rng.dirichlet(np.ones(3), 40)
    rows = [{"label": int(t), "p": p.tolist()} for t, p in zip(true, probs, strict=True)]
    features = se.Features(label=se.ClassLabel(names=names), p=se.Sequence(se.Value("float64")))
    ds = se.build(rows, features, name="cls", home=tmp_path, progress=False)
    r = se.evaluate(ds, predictions="p", ground_truth="label")
    browser = ds.browse(page_size=48, evaluation=r)
    assert browser.evaluation["counts"] == {"mistakes": len(r.mistakes())}
    invoke(browser, "evaluation_rows", {"what": "mistakes"})
    assert browser.page_rows().tolist() == r.mistakes()["row"].tolist()[:48]
    with pytest.raises(InvalidOptionError, match="not 'fp'"):
        browser.show_evaluation("fp")


def test_an_evaluation_of_other_rows_is_refused_and_a_save_drops_it(tmp_path: Path) -> None:
    ds, r = _evaluated(tmp_path)
    with pytest.raises(InvalidOptionError, match=r"run se\.evaluate on the dataset you browse"):
        ds.select([0, 1, 2]).browse(evaluation=r)
    browser = ds.browse(page_size=24, evaluation=r)
    browser.click(0)
    browser.flag_selection()
    browser.drop_flagged()
    browser.save("drop one")
    assert browser.evaluation == {}
    content, _ = invoke(browser, "refresh")
    assert all("outcomes" not in (cell["overlays"] or {}) for cell in content["cells"])
