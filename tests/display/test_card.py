"""The HTML cards of a dataset and of a diff: what they show, what they decode, and that user text is escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Image
from tests.conftest import pet_rows


@pytest.fixture
def pets(tmp_path: Path, pet_features: Features, jpegs: list[bytes]) -> CachedDataset:
    """300 rows in several shards."""
    return se.build(
        pet_rows(300, jpegs),
        pet_features,
        name="pets",
        home=tmp_path / "home",
        progress=False,
        batch_size=50,
        shard_size=1,
        description="Pets <b>subset</b>",
        license="CC-BY-4.0",
        metadata={"author": "ada"},
    )


def test_html_card_decodes_only_the_strip(pets: CachedDataset, monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.display import card as _card

    calls = []
    original = _card.open_thumbnail
    monkeypatch.setattr(_card, "open_thumbnail", lambda data, size: calls.append(1) or original(data, size))
    page = pets._repr_html_()
    assert len(calls) == _card.STRIP_LENGTH
    assert "cat" in page
    assert "CC-BY-4.0" in page


def test_html_shows_thumbnails_side_by_side_and_escapes(tmp_path: Path, jpegs: list[bytes]) -> None:
    evil = "<img src=x onerror=alert(1)>"
    features = Features(image=Image(), label=ClassLabel(names=[evil, "ok"]))
    a = se.build([{"image": jpegs[i], "label": 0} for i in range(4)], features, name="h", home=tmp_path, progress=False)
    b = a.relabel({1: "ok", 2: "ok"}).save(message=evil)
    page = se.compare(a, b)._repr_html_()
    assert evil not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<img src='data:image/jpeg;base64,") == 4  # before and after, two changed rows
    assert "→" in page
