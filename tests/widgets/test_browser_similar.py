"""The detail pane's "Similar rows" in Python: by an embedding, by the images' perceptual hash, or a clear no."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from tests.widgets.commands import invoke

PLANTED = 13  # a resized, re-encoded copy of row 5


def _picture(seed: int) -> np.ndarray:
    """A smooth grey picture: random 6x6 blocks, upscaled (so its perceptual hash is its own)."""
    small = np.random.default_rng(seed).integers(0, 256, size=(6, 6), dtype=np.uint8)
    return np.asarray(PILImage.fromarray(small).resize((96, 96), PILImage.Resampling.BICUBIC))


def _near_copy(pixels: np.ndarray) -> bytes:
    smaller = PILImage.fromarray(pixels).resize((72, 72), PILImage.Resampling.LANCZOS)
    out = io.BytesIO()
    smaller.save(out, format="JPEG", quality=70)
    return out.getvalue()


@pytest.fixture
def pictures(tmp_path: Path) -> se.CachedDataset:
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]))
    rows: list[tuple[str, dict[str, Any]]] = []
    for i in range(24):
        image: Any = _near_copy(_picture(5)) if i == PLANTED else _picture(i)
        rows.append((f"p{i:02d}", {"image": image, "label": i % 2}))
    return se.build(rows, features, name="pictures", home=tmp_path, progress=False)


@pytest.fixture
def vectors(tmp_path: Path) -> se.CachedDataset:
    rng = np.random.default_rng(3)
    emb = rng.normal(size=(40, 8))
    emb[31] = emb[7] + 1e-3  # row 31 is a near duplicate of row 7
    other = np.zeros((40, 2))
    other[:, 0] = np.arange(40)
    features = se.Features(
        score=se.Sequence(se.Value("float32"), length=2),
        clip_embedding=se.Sequence(se.Value("float32"), length=8),
        label=se.ClassLabel(names=["a", "b"]),
    )
    rows = [{"score": other[i].tolist(), "clip_embedding": emb[i].tolist(), "label": i % 2} for i in range(40)]
    return se.build(rows, features, name="vectors", home=tmp_path, progress=False)


def test_the_planted_near_duplicate_comes_first_by_perceptual_hash(pictures: se.CachedDataset) -> None:
    browser = pictures.browse(page_size=24)
    assert browser.similar_by == "the phash of 'image'"
    assert browser.similar_reason == ""
    assert browser.similar(5).tolist()[0] == PLANTED
    assert browser.similar(PLANTED, k=3).tolist()[0] == 5
    response, _ = invoke(browser, "similar", {"row": 5})
    assert response == {"type": "ok"}
    shown = browser.page_rows().tolist()
    assert shown[:2] == [5, PLANTED]  # the row itself first, then the closest
    assert len(shown) == 9
    assert browser.subset == "row 5 and the 8 rows most like it by the phash of 'image'"
    # the order is the Hamming distance's, computed here from the hashes themselves
    hashes = signals.perceptual_hashes(pictures).column("hash").to_numpy()
    distances = signals.hamming_distances(hashes, int(hashes[5]))
    assert np.all(np.diff(distances[shown[1:]]) >= 0)


def test_back_shows_the_grid_that_was_shown_before(pictures: se.CachedDataset) -> None:
    browser = pictures.browse(page_size=24)
    browser.label_filter = [1]
    assert browser.can_go_back is False
    invoke(browser, "similar", {"row": 5})
    assert browser.can_go_back is True
    assert browser.label_filter == []  # the similar rows are shown whatever their label
    invoke(browser, "similar", {"row": PLANTED})  # similar rows of a similar row: two grids to go back
    assert browser.page_rows().tolist()[:2] == [PLANTED, 5]
    invoke(browser, "back", {})
    assert browser.page_rows().tolist()[:2] == [5, PLANTED]
    invoke(browser, "back", {})
    assert browser.subset == ""
    assert browser.label_filter == [1]
    assert browser.page_rows().tolist() == list(range(1, 24, 2))
    assert browser.can_go_back is False
    response, _ = invoke(browser, "back", {})
    assert response["type"] == "error"
    assert "no grid to go back to" in response["message"]


def test_the_hashes_are_computed_once_per_version(pictures: se.CachedDataset) -> None:
    browser = pictures.browse(page_size=24)
    found = browser._state.similarity
    assert found is not None
    first = found.values(pictures)
    browser.show_similar(3)
    browser.show_similar(9)
    assert found.values(pictures) is first  # kept: the next click reads no image
    other = pictures.select(list(range(0, 24, 2)))  # a view has its own rows, so its own entry
    assert len(found.values(other)) == 12


def test_by_the_embedding_named_for_one_and_by_choice(vectors: se.CachedDataset) -> None:
    browser = vectors.browse(page_size=24)
    assert browser.similar_by == "the embedding 'clip_embedding'"  # the column named for an embedding
    assert browser.similar(7).tolist()[0] == 31
    browser.show_similar(31, k=4)
    assert browser.page_rows().tolist()[:2] == [31, 7]
    chosen = vectors.browse(page_size=24, similar_by="score")
    assert chosen.similar_by == "the embedding 'score'"
    assert chosen.similar(10, k=4).tolist() == [9, 11, 8, 12]  # ties broken by the lower row
    with pytest.raises(InvalidOptionError, match="similar_by='label': that column holds ClassLabel"):
        vectors.browse(similar_by="label")
    with pytest.raises(InvalidOptionError, match="similar_by='nope' is neither a column"):
        vectors.browse(similar_by="nope")
    with pytest.raises(ColumnNotFoundError, match="similar_by='phash' hashes images, and this dataset has no Image"):
        vectors.browse(similar_by="phash")


def test_no_embedding_and_no_image_disables_it_and_says_what_to_add(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("float64"), label=se.ClassLabel(names=["a", "b"]))
    ds = se.build(
        [{"x": float(i), "label": i % 2} for i in range(10)], features, name="plain", home=tmp_path, progress=False
    )
    browser = ds.browse(page_size=24)
    assert browser.similar_by == ""
    assert "no embedding column" in browser.similar_reason
    assert "ds.add_columns({'embedding': vectors})" in browser.similar_reason
    response, _ = invoke(browser, "similar", {"row": 2})
    assert response["type"] == "error"
    assert "nothing to find similar rows by" in response["message"]
    assert browser.status.startswith("error: InvalidOptionError: nothing to find similar rows by")
    assert browser.num_rows == 10  # the grid is as it was


def test_a_stored_hash_column_is_used_without_decoding(pictures: se.CachedDataset) -> None:
    hashes = signals.perceptual_hashes(pictures, method="dhash").column("hash")
    hashed = pictures.add_columns({"dhash": hashes})
    browser = hashed.browse(page_size=24)
    assert browser.similar_by == "the perceptual hash 'dhash'"
    assert browser.similar(5).tolist()[0] == PLANTED


def test_a_save_keeps_the_choice_and_forgets_the_grids(vectors: se.CachedDataset) -> None:
    browser = vectors.browse(page_size=24, similar_by="score")
    browser.show_similar(3)
    browser.flagged = [0]
    browser.drop_flagged()
    browser.save("drop row 0")
    assert browser.can_go_back is False
    assert browser.similar_by == "the embedding 'score'"
    assert browser.similar(9, k=2).tolist() == [8, 10]  # rows of the new version (row 10 was row 11)
