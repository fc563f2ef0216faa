"""se.evaluate kept in the home: the same version, columns and parameters are read back, not computed again,
also from a new process; a relabelled and saved version, a view, or other columns are computed afresh."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import stable_explore as se
from stable_explore.evaluation import ClassificationResult, DetectionResult
from stable_explore.testing.coco_scenes import coco_scene, scene_rows

NAMES = ["cat", "dog", "fox"]
BOX_NAMES = ["c1", "c3", "c7", "c12"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pets(home: Path) -> tuple[se.CachedDataset, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    true = rng.integers(0, 3, 200)
    probs = rng.dirichlet(np.ones(3), 200)
    features = se.Features(
        label=se.ClassLabel(names=NAMES),
        pred=se.ClassLabel(names=NAMES),
        probs=se.Sequence(se.Value("float64")),
    )
    pred = probs.argmax(axis=1)
    rows = [
        (f"p{i:03d}", {"label": int(t), "pred": int(p), "probs": q.tolist()})
        for i, (t, p, q) in enumerate(zip(true, pred, probs, strict=True))
    ]
    return se.build(rows, features, name="pets", home=home, progress=False), true, pred


@pytest.fixture
def scenes(home: Path) -> se.CachedDataset:
    truths, found, _, _ = coco_scene(images=40, seed=4)
    features = se.Features(objects=se.Boxes(names=BOX_NAMES), predictions=se.Boxes(names=BOX_NAMES))
    return se.build(
        scene_rows(truths, {"predictions": found}, BOX_NAMES), features, name="scenes", home=home, progress=False
    )


class Counter:
    """Wraps a function of a module and counts its calls (the computing step an evaluation from the home skips)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        self.calls = 0
        original = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def _entries(home: Path, name: str) -> list[Path]:
    return sorted((home / name / "evaluations").rglob("*.npz"))


def _same_classification(a: ClassificationResult, b: ClassificationResult) -> None:
    assert a.accuracy == b.accuracy
    np.testing.assert_array_equal(a.confusion_matrix, b.confusion_matrix)
    pd.testing.assert_frame_equal(a.report(), b.report())
    pd.testing.assert_frame_equal(a.mistakes(), b.mistakes())
    assert a.keys == b.keys


def _same_detection(a: DetectionResult, b: DetectionResult) -> None:
    assert (a.map, a.map50, a.map75) == (b.map, b.map50, b.map75)
    pd.testing.assert_series_equal(a.per_class_ap(), b.per_class_ap())
    pd.testing.assert_frame_equal(a.boxes(), b.boxes())
    for outcome in ("tp", "fp", "fn"):
        assert a.rows(outcome=outcome).tolist() == b.rows(outcome=outcome).tolist()
    pd.testing.assert_frame_equal(a.precision_recall(0, iou=0.75), b.precision_recall(0, iou=0.75))


def test_a_second_classification_is_read_back_not_computed(
    pets: tuple[se.CachedDataset, np.ndarray, np.ndarray], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module("stable_explore.evaluation.evaluate")  # the package's name is the function

    ds, true, pred = pets
    reads = Counter(monkeypatch, module, "_predictions")
    first = se.evaluate(ds, predictions="probs", ground_truth="label", top_k=2)
    assert isinstance(first, ClassificationResult)
    assert first.cache_info == "computed: first evaluation of probs against label on this version"
    assert reads.calls == 1
    assert len(_entries(home, "pets")) == 1
    again = se.evaluate(ds, predictions="probs", ground_truth="label", top_k=2)
    assert isinstance(again, ClassificationResult)
    assert again.cache_info == "reused: same version, columns and parameters"
    assert reads.calls == 1  # the columns were not read and checked again
    _same_classification(first, again)
    assert again.accuracy == first.accuracy
    # top_k only changes a figure of the kept arrays: the same entry answers it
    top1 = se.evaluate(ds, predictions="probs", ground_truth="label")
    assert top1.cache_info.startswith("reused")
    assert top1.accuracy == pytest.approx(float(np.mean(true == pred)))
    # cache=False computes, and keeps nothing new
    fresh = se.evaluate(ds, predictions="probs", ground_truth="label", top_k=2, cache=False)
    assert fresh.cache_info == "computed: cache=False"
    assert reads.calls == 2
    _same_classification(first, fresh)
    # another column of predictions is another entry
    other = se.evaluate(ds, predictions="pred", ground_truth="label")
    assert other.cache_info.startswith("computed: first evaluation of pred")
    assert len(_entries(home, "pets")) == 2


def test_a_second_detection_is_read_back_not_matched_again(
    scenes: se.CachedDataset, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stable_explore.evaluation import detection as module

    matches = Counter(monkeypatch, module, "evaluate_boxes")
    first = se.evaluate(scenes, predictions="predictions", ground_truth="objects")
    assert isinstance(first, DetectionResult)
    assert first.cache_info.startswith("computed: first evaluation of predictions against objects")
    again = se.evaluate(scenes, predictions="predictions", ground_truth="objects")
    assert isinstance(again, DetectionResult)
    assert again.cache_info == "reused: same version, columns and parameters"
    assert matches.calls == 1
    _same_detection(first, again)
    assert again.counts()["fp"].tolist() == first.counts()["fp"].tolist()
    # the ground truth found by default is the same column, so the same entry
    assert se.evaluate(scenes, predictions="predictions").cache_info.startswith("reused")
    assert matches.calls == 1


def test_a_new_process_reads_the_kept_evaluation(scenes: se.CachedDataset, home: Path) -> None:
    first = se.evaluate(scenes, predictions="predictions", ground_truth="objects")
    assert isinstance(first, DetectionResult)
    code = (
        "import stable_explore as se\n"
        "from stable_explore.evaluation import detection\n"
        "def refuse(*a, **k):\n"
        "    raise AssertionError('matched again')\n"
        "detection.evaluate_boxes = refuse\n"
        f"ds = se.load('scenes@{scenes.version}', home={str(home)!r})\n"
        "r = se.evaluate(ds, predictions='predictions', ground_truth='objects')\n"
        "print(r.cache_info)\n"
        "print(repr(r.map), repr(r.map50), r.rows(outcome='fn').tolist())\n"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "reused: same version, columns and parameters"
    assert lines[1] == f"{first.map!r} {first.map50!r} {first.rows(outcome='fn').tolist()}"


def test_a_relabelled_and_saved_version_is_evaluated_afresh(
    pets: tuple[se.CachedDataset, np.ndarray, np.ndarray], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module("stable_explore.evaluation.evaluate")  # the package's name is the function

    ds, true, pred = pets
    first = se.evaluate(ds, predictions="pred", ground_truth="label")
    wrong = first.rows(true="cat", pred="dog")[:3].tolist()
    assert wrong
    fixed = ds.relabel(dict.fromkeys(wrong, "dog")).save(message="the model was right", progress=False)
    reads = Counter(monkeypatch, module, "_predictions")
    after = se.evaluate(fixed, predictions="pred", ground_truth="label")
    assert reads.calls == 1
    assert after.cache_info.startswith("computed: first evaluation")
    relabelled = true.copy()
    relabelled[wrong] = 1
    assert after.accuracy == pytest.approx(float(np.mean(relabelled == pred)))
    assert after.accuracy > first.accuracy
    assert after.rows(true="cat", pred="dog").tolist() == [
        r for r in first.rows(true="cat", pred="dog") if r not in wrong
    ]
    # and the old version still answers from its own entry
    assert se.evaluate(ds, predictions="pred", ground_truth="label").cache_info.startswith("reused")


def test_a_box_edit_and_save_is_matched_afresh(scenes: se.CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.evaluation import detection as module

    first = se.evaluate(scenes, predictions="predictions", ground_truth="objects")
    assert isinstance(first, DetectionResult)
    row = int(first.rows(outcome="fp")[0])
    edited = scenes.drop_boxes({row: [0]}, column="predictions").save(progress=False)
    matches = Counter(monkeypatch, module, "evaluate_boxes")
    after = se.evaluate(edited, predictions="predictions", ground_truth="objects")
    assert matches.calls == 1
    assert isinstance(after, DetectionResult)
    assert len(after.matches.detection_outcomes[row]) == len(first.matches.detection_outcomes[row]) - 1


def test_views_and_renamed_columns_are_never_answered_for_one_another(
    pets: tuple[se.CachedDataset, np.ndarray, np.ndarray], home: Path
) -> None:
    ds, true, pred = pets
    se.evaluate(ds, predictions="pred", ground_truth="label")
    half = ds[::2]
    view = se.evaluate(half, predictions="pred", ground_truth="label")
    assert view.cache_info.startswith("computed")
    assert view.accuracy == pytest.approx(float(np.mean(true[::2] == pred[::2])))
    assert se.evaluate(ds[::2], predictions="pred", ground_truth="label").cache_info.startswith("reused")
    other = se.evaluate(ds[1::2], predictions="pred", ground_truth="label")
    assert other.cache_info.startswith("computed")
    # swapping the names of the two label columns: the same names and features, other stored columns
    swapped = ds.rename_columns({"label": "tmp", "pred": "label"}).rename_columns({"tmp": "pred"})
    r = se.evaluate(swapped, predictions="pred", ground_truth="label")
    assert r.cache_info.startswith("computed")
    np.testing.assert_array_equal(r.confusion_matrix, se.evaluate(ds, predictions="pred").confusion_matrix.T)


def test_a_damaged_entry_is_computed_again_and_gc_drops_deleted_versions_entries(
    pets: tuple[se.CachedDataset, np.ndarray, np.ndarray], home: Path
) -> None:
    ds, _, _ = pets
    first = se.evaluate(ds, predictions="pred", ground_truth="label")
    [entry] = _entries(home, "pets")
    entry.write_bytes(b"not a zip")
    again = se.evaluate(ds, predictions="pred", ground_truth="label")
    assert again.cache_info.startswith("computed")
    _same_classification(first, again)
    assert se.evaluate(ds, predictions="pred", ground_truth="label").cache_info.startswith("reused")

    dropped = ds.drop([0]).save(progress=False)  # latest moves on; the first version is untagged
    se.evaluate(dropped, predictions="pred", ground_truth="label")
    assert {p.parent.name for p in _entries(home, "pets")} == {ds.version, dropped.version}
    report = se.gc(home=home, keep=0)
    assert f"pets@{ds.version}" in report.removed
    assert {p.parent.name for p in _entries(home, "pets")} == {dropped.version}
