"""Similar rows by embedding (against brute force in scikit-learn) and by perceptual hash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.signals import hamming_distances, nearest_neighbors, nearest_rows, similar_rows


def test_nearest_rows_agree_with_scikit_learn() -> None:
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(7)
    data = rng.normal(size=(2000, 16))
    for metric in ("euclidean", "cosine"):
        index = NearestNeighbors(n_neighbors=11, metric=metric, algorithm="brute").fit(data)
        _, theirs = index.kneighbors(data[[5, 1234]])
        for query, expected in zip([5, 1234], theirs, strict=True):
            ours = nearest_rows(data, query, k=10, metric=metric)
            assert ours.tolist() == [r for r in expected.tolist() if r != query][:10]


def test_chunks_do_not_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.random.default_rng(1).normal(size=(1000, 4))
    whole = nearest_rows(data, 10, k=20)
    monkeypatch.setattr("stable_explore.signals.neighbors._CELLS", 64)
    assert nearest_rows(data, 10, k=20).tolist() == whole.tolist()


def test_ties_are_broken_by_row_and_the_row_itself_is_left_out() -> None:
    data = np.zeros((6, 2))
    assert nearest_rows(data, 3, k=10).tolist() == [0, 1, 2, 4, 5]
    assert nearest_rows(data, -1, k=2).tolist() == [0, 1]
    assert nearest_rows(data[:1], 0, k=3).tolist() == []


def test_hamming_distance_counts_differing_bits() -> None:
    hashes = np.array([0, 0xFFFFFFFFFFFFFFFF, 0b1, 0xF0], dtype=np.uint64)
    assert hamming_distances(hashes, 0).tolist() == [0, 64, 1, 4]


@pytest.fixture
def hashed(home: Path) -> se.CachedDataset:
    features = se.Features(vec=se.Sequence(se.Value("float32"), length=2), phash=se.Value("uint64"))
    hashes = [0, 0b1, 0b111, 0xFFFF, 0b11]
    rows = [{"vec": [float(i), 0.0], "phash": h} for i, h in enumerate(hashes)]
    return se.build(rows, features, name="hashed", home=home, progress=False)


def test_similar_rows_by_column_embedding_or_hash(hashed: se.CachedDataset) -> None:
    assert similar_rows(hashed, 0, embedding="vec", k=2).tolist() == [1, 2]
    assert similar_rows(hashed, 0, hashes="phash", k=3).tolist() == [1, 4, 2]
    assert similar_rows(hashed, 1, hashes=np.array([5, 4, 4, 7, 9], dtype=np.uint64), k=1).tolist() == [2]
    view = hashed.select([4, 3, 0])  # positions are positions in the view
    assert similar_rows(view, 2, hashes="phash", k=2).tolist() == [0, 1]


def test_similar_rows_errors(hashed: se.CachedDataset) -> None:
    with pytest.raises(InvalidOptionError, match="exactly one of embedding="):
        similar_rows(hashed, 0)
    with pytest.raises(InvalidOptionError, match="exactly one of embedding="):
        similar_rows(hashed, 0, embedding="vec", hashes="phash")
    with pytest.raises(RowIndexError, match="row 9 is out of range for 5 rows"):
        similar_rows(hashed, 9, embedding="vec")
    with pytest.raises(InvalidOptionError, match="metric must be one of"):
        similar_rows(hashed, 0, embedding="vec", metric="manhattan")


def test_nearest_neighbors_of_some_rows_are_those_rows_of_every_row() -> None:
    data = np.random.default_rng(3).normal(size=(500, 6))
    for metric in ("euclidean", "cosine"):
        every = nearest_neighbors(data, 5, metric=metric, backend="sklearn")
        some = nearest_neighbors(data, 5, rows=[7, -1, 250], metric=metric, backend="numpy")
        assert some[1].tolist() == every[1][[7, 499, 250]].tolist()
        assert np.allclose(some[0], every[0][[7, 499, 250]], atol=1e-5)
        assert nearest_rows(data, 250, k=5, metric=metric).tolist() == every[1][250].tolist()
    with pytest.raises(RowIndexError, match="row 500 is out of range for 500 rows"):
        nearest_neighbors(data, 3, rows=[1, 500])
