"""Bad input to a signal is a clear error that names the column, the row and its key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import ColumnNotFoundError, InvalidOptionError


@pytest.fixture
def pets(tmp_path: Path) -> se.CachedDataset:
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["cat", "dog"]), note=se.Value("string"))
    rows = [
        (f"k{i}", {"image": np.full((8, 8), i * 20, dtype=np.uint8), "label": i % 2, "note": "x"}) for i in range(6)
    ]
    return se.build(rows, features, name="pets", home=tmp_path, progress=False)


def test_pred_probs_of_the_wrong_width_name_the_row_and_key(pets: se.CachedDataset) -> None:
    probs = np.full((6, 2), 0.5)
    probs[3] = [1.5, -0.5]
    with pytest.raises(InvalidOptionError, match=r"row 3 \(key 'k3'\) should hold 2 probabilities"):
        signals.label_issues(pets, probs)
    with pytest.raises(InvalidOptionError, match="has 2 rows for a dataset of 6"):
        signals.label_issues(pets, probs[:2])


def test_missing_columns_are_named(pets: se.CachedDataset) -> None:
    with pytest.raises(ColumnNotFoundError, match="no column 'pred' of predicted probabilities"):
        signals.label_issues(pets, "pred")
    with pytest.raises(ColumnNotFoundError, match="'note' is not an Image column"):
        signals.image_stats(pets, column="note")
    with pytest.raises(ColumnNotFoundError, match="no embedding column 'emb'"):
        signals.embedding_outliers(pets, "emb")


def test_embeddings_with_a_nan_name_the_row(pets: se.CachedDataset) -> None:
    vectors = np.zeros((6, 3))
    vectors[4, 1] = np.nan
    with pytest.raises(InvalidOptionError, match=r"row 4 \(key 'k4'\) has a NaN or infinite value"):
        signals.embedding_outliers(pets, vectors)


def test_a_function_of_a_batch_of_rows_gives_the_embeddings(pets: se.CachedDataset) -> None:
    table = signals.embedding_outliers(pets, lambda batch: [[np.asarray(im).mean()] for im in batch["image"]], k=2)
    assert table.column("key").to_pylist() == [f"k{i}" for i in range(6)]
    assert table.column("outlier_rank").to_pylist()[0] in (1, 2)  # the darkest image is at an end


def test_numpy_and_sklearn_neighbours_agree() -> None:
    points = np.random.default_rng(1).normal(size=(300, 5)).astype(np.float32)
    ours = signals.nearest_neighbors(points, 4, backend="numpy")
    theirs = signals.nearest_neighbors(points, 4, backend="sklearn")
    assert (ours[1] == theirs[1]).all()
    assert np.allclose(ours[0], theirs[0], atol=1e-4)


def test_a_view_is_keyed_by_its_own_rows(pets: se.CachedDataset) -> None:
    view = pets[[5, 1, 3]]
    stats = signals.image_stats(view)
    assert stats.column("row").to_pylist() == [0, 1, 2]
    assert stats.column("key").to_pylist() == ["k5", "k1", "k3"]
    assert stats.column("brightness").to_pylist() == pytest.approx([100 / 255, 20 / 255, 60 / 255])


def test_whole_row_duplicates_use_the_stored_row_hash(pets: se.CachedDataset, tmp_path: Path) -> None:
    assert signals.exact_duplicates(pets, "row").num_rows == 0
    assert signals.exact_duplicates(pets, "note").column("group_size").to_pylist() == [6] * 6


def test_an_empty_view_gives_empty_tables(pets: se.CachedDataset) -> None:
    empty = pets[0:0]
    assert signals.image_stats(empty).num_rows == 0
    assert signals.near_duplicates(empty).num_rows == 0


def test_no_embedding_means_the_pixel_embedding(pets: se.CachedDataset) -> None:
    assert np.allclose(signals.embedding_matrix(pets, None), signals.pixel_embeddings(pets))


@pytest.mark.parametrize("method", ["auto", "numpy"])
def test_label_issues_of_an_empty_view_is_an_empty_table(pets: se.CachedDataset, method: str) -> None:
    found = signals.label_issues(pets[0:0], np.zeros((0, 2)), method=method)
    assert found.num_rows == 0
    assert found.column_names == ["row", "key", "label", "suggested", "self_confidence"]


@pytest.mark.parametrize("method", ["auto", "numpy"])
def test_label_issues_on_rows_of_one_class_says_why_it_cannot_judge_them(pets: se.CachedDataset, method: str) -> None:
    cats = pets.filter(label="cat")
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]])
    with pytest.raises(InvalidOptionError, match=r"labelled 'cat'.*at least two classes.*whole dataset"):
        signals.label_issues(cats, probs, method=method)


def test_label_signals_skip_the_rows_without_a_label(tmp_path: Path) -> None:
    features = se.Features(label=se.ClassLabel(names=["small", "big"]))
    labels = [0, 0, 0, None, 1, 1, 1, 0, None]
    ds = se.build([{"label": v} for v in labels], features, name="partly", home=tmp_path, progress=False)
    probs = np.array([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 4 + [[0.05, 0.95], [0.5, 0.5]])
    for method in ("auto", "numpy"):
        found = signals.label_issues(ds, probs, method=method)
        assert found.column("row").to_pylist() == [7], method  # row 3, unlabelled but "big" to the model, is not judged
        assert found.column("suggested").to_pylist() == ["big"]
    points = np.array([[0.0], [0.1], [0.2], [0.25], [9.0], [9.1], [9.2], [9.3], [9.35]])
    near = signals.neighbor_label_issues(ds, points, k=3, agreement=0.6)
    assert near.select(["row", "suggested"]).to_pylist() == [{"row": 7, "suggested": "big"}]
    assert near.column("neighbor_agreement").to_pylist() == [pytest.approx(2 / 3)]  # one neighbour has no label


def test_the_whole_versions_array_given_for_a_view_says_to_take_the_views_rows(pets: se.CachedDataset) -> None:
    view = pets[2:5]
    whole = np.random.default_rng(0).normal(size=(6, 3))
    with pytest.raises(InvalidOptionError, match=r"whole version's row count.*pass embedding\[view\.base_rows"):
        signals.embedding_outliers(view, whole, k=1)
    probs = np.full((6, 2), 0.5)
    with pytest.raises(InvalidOptionError, match=r"whole version's row count.*pred_probs\[view\.base_rows"):
        signals.label_issues(view, probs)
    assert signals.embedding_outliers(view, whole[view.base_rows()], k=1).num_rows == 3
    with pytest.raises(InvalidOptionError, match=r"expected \(6, d\)$"):
        signals.embedding_outliers(pets, whole[:4], k=1)  # not a view: no hint


def test_logits_given_as_pred_probs_are_shown_on_one_line_and_named(pets: se.CachedDataset) -> None:
    logits = np.random.default_rng(0).normal(size=(6, 2)) * 3
    logits[0] = [-2.5, 1.25]
    with pytest.raises(InvalidOptionError) as caught:
        signals.label_issues(pets, logits)
    message = str(caught.value)
    assert "row 0 (key 'k0') should hold 2 probabilities in 0..1 (one per class), found [-2.5, 1.25]" in message
    assert "\n" not in message
    assert "look like logits: pass their softmax" in message
