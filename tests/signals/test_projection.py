"""The 2D projection of an embedding: PCA against scikit-learn's, UMAP through the embed extra, and embedding inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.errors import ColumnNotFoundError, EncodingError, InvalidOptionError
from stable_explore.signals import embedding_matrix, pca_2d, project


def digits_matrix() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.data.astype(np.float64), bunch.target


def test_pca_matches_scikit_learn_up_to_each_axis_sign() -> None:
    from sklearn.decomposition import PCA

    data, _ = digits_matrix()
    ours = pca_2d(data)
    theirs = PCA(n_components=2, svd_solver="full").fit_transform(data)
    assert ours.dtype == np.float32
    assert ours.shape == (len(data), 2)
    for axis in range(2):
        sign = np.sign(np.dot(ours[:, axis], theirs[:, axis]))
        np.testing.assert_allclose(ours[:, axis] * sign, theirs[:, axis], rtol=1e-4, atol=1e-3)


def test_pca_is_deterministic_and_chunked_rows_give_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = digits_matrix()
    whole = pca_2d(data)
    monkeypatch.setattr("stable_explore.signals.projection._CHUNK", 100)  # 18 chunks instead of one
    np.testing.assert_allclose(pca_2d(data), whole, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(pca_2d(data[::-1])[::-1], pca_2d(data))  # row order does not flip an axis


def test_pca_separates_classes_of_digits() -> None:
    """Zeros and sixes (far apart in pixel space) land in distinct regions of the map."""
    data, target = digits_matrix()
    points = pca_2d(data)
    zero, four = points[target == 0].mean(axis=0), points[target == 4].mean(axis=0)
    spread = points.std(axis=0).mean()
    assert np.linalg.norm(zero - four) > spread


def test_a_one_dimensional_embedding_gets_a_flat_second_axis() -> None:
    points = pca_2d(np.arange(5, dtype=float)[:, None])
    assert points[:, 1].tolist() == [0.0] * 5
    assert points[:, 0].tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]


@pytest.mark.slow  # numba compiles UMAP's kernels on first use: about a minute
def test_umap_projects_when_asked() -> None:
    pytest.importorskip("umap", reason="umap-learn is in the test extras")
    data, _ = digits_matrix()
    points = project(data[:300], "umap", seed=1, n_neighbors=10)
    assert points.shape == (300, 2)
    assert points.dtype == np.float32
    assert np.isfinite(points).all()


def test_unknown_method_names_the_choices() -> None:
    with pytest.raises(InvalidOptionError, match=r"method must be one of \('pca', 'umap'\), got 'tsne'"):
        project(np.zeros((3, 2)), "tsne")


@pytest.fixture
def vectors(home: Path) -> se.CachedDataset:
    features = se.Features(
        vec=se.Sequence(se.Value("float32"), length=3),
        ragged=se.Sequence(se.Value("float64")),
        score=se.Value("float64"),
        name=se.Value("string"),
    )
    rows = [{"vec": [i, i * 2, 1], "ragged": [i, 0.5], "score": i / 2, "name": f"r{i}"} for i in range(5)]
    return se.build(rows, features, name="vectors", home=home, progress=False)


def test_embedding_from_a_column_an_array_or_a_function(vectors: se.CachedDataset) -> None:
    fixed = embedding_matrix(vectors, "vec")
    assert fixed.tolist() == [[i, i * 2, 1] for i in range(5)]
    assert embedding_matrix(vectors, "ragged").shape == (5, 2)
    assert embedding_matrix(vectors, "score").tolist() == [[i / 2] for i in range(5)]
    assert embedding_matrix(vectors, np.ones((5, 4))).shape == (5, 4)
    seen: list[int] = []

    def lengths(batch: dict[str, list]) -> np.ndarray:
        seen.append(len(batch["name"]))
        return np.array([[len(name), 1.0] for name in batch["name"]])

    assert embedding_matrix(vectors, lengths, batch_size=2).tolist() == [[2.0, 1.0]] * 5
    assert seen == [2, 2, 1]
    view = vectors.select([4, 0])
    assert embedding_matrix(view, "vec").tolist() == [[4, 8, 1], [0, 0, 1]]


def test_bad_embeddings_say_what_and_where(vectors: se.CachedDataset, home: Path) -> None:
    with pytest.raises(ColumnNotFoundError, match="no embedding column 'emb'"):
        embedding_matrix(vectors, "emb")
    with pytest.raises(InvalidOptionError, match="column 'name' holds string"):
        embedding_matrix(vectors, "name")
    with pytest.raises(InvalidOptionError, match=r"shape \(4, 2\); the dataset has 5 rows"):
        embedding_matrix(vectors, np.zeros((4, 2)))
    with pytest.raises(InvalidOptionError, match=r"returned shape \(1, 2\) for rows 0..1"):
        embedding_matrix(vectors, lambda batch: np.zeros((1, 2)), batch_size=2)
    broken = np.zeros((5, 2))
    broken[3, 1] = np.nan
    with pytest.raises(InvalidOptionError, match=r"row 3 \(key 3\) has a NaN"):
        embedding_matrix(vectors, broken)
    ragged = se.build(
        [{"v": [1.0] * (2 if i != 2 else 3)} for i in range(4)],
        se.Features(v=se.Sequence(se.Value("float32"))),
        name="ragged",
        home=home,
        progress=False,
    )
    with pytest.raises(EncodingError, match=r"column 'v': row 2 \(key 2\) has 3 values where row 0 has 2"):
        embedding_matrix(ragged, "v")


def test_pca_with_its_residual_matches_an_svd(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.signals.projection import pca

    data = np.random.default_rng(4).normal(size=(300, 6)) * np.array([5, 3, 2, 1, 0.5, 0.1])
    centred = data - data.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    expected = centred @ components[:3].T
    ours = pca(data, 3, residual=True)
    np.testing.assert_allclose(np.abs(ours[:, :3]), np.abs(expected), atol=1e-9)
    np.testing.assert_allclose(ours[:, 3], np.linalg.norm(centred - expected @ components[:3], axis=1), atol=1e-9)
    monkeypatch.setattr("stable_explore.signals.projection._CHUNK", 7)  # chunks do not change the answer
    np.testing.assert_allclose(pca(data, 3, residual=True), ours, atol=1e-9)
    assert pca(data[:2], 5).shape == (2, 2)  # no more components than rows
