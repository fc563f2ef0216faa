"""The HTML cards of a dataset and of a diff: what they show, what they decode, and that user text is escaped."""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import CachedDataset, ClassLabel, Features, Image, Value
from stable_explore._units import format_size
from stable_explore.display.card import CHANGED_ROWS_SHOWN, STRIP_LENGTH, THUMB_PX, dataset_card, diff_card
from tests.conftest import NAMES, pet_rows

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "x' onmouseover='alert(3)",
    'y" onclick="alert(4)',
    "a&b",
]
SAFE_TAGS = {
    "div",
    "b",
    "br",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "figure",
    "figcaption",
    "img",
    "span",
}


class _Markup(HTMLParser):
    """Every tag and attribute of a page, as a browser's parser sees them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert(page: str, *texts: str) -> _Markup:
    """No markup of the user's reached the page: only our tags, no event handlers, images only inline;
    and each of ``texts`` is shown as text."""
    markup = _Markup(page)
    for tag, attrs in markup.tags:
        assert tag in SAFE_TAGS, tag
        assert set(attrs) <= {"class", "style", "src", "alt", "colspan", "data-testid"}, attrs
        if tag == "img":
            assert (attrs["src"] or "").startswith("data:image/"), attrs
    shown = "".join(markup.text)
    for text in texts:
        assert text in shown, text
    return markup


def images_of(page: str) -> list[PILImage.Image]:
    images = []
    for tag, attrs in _Markup(page).tags:
        if tag == "img":
            _, data = (attrs["src"] or "").split(";base64,")
            images.append(PILImage.open(io.BytesIO(base64.b64decode(data))))
    return images


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


def test_the_card_shows_ref_rows_shards_size_description_schema_labels_and_a_strip(pets: CachedDataset) -> None:
    page = pets._repr_html_()
    assert page == dataset_card(pets, pets._summary())
    markup = assert_inert(page, "Pets <b>subset</b>", "License: CC-BY-4.0")
    text = "".join(markup.text)
    assert f"pets@{pets.version} · 300 rows, 6 shards, {format_size(pets.nbytes)}" in text
    assert "ClassLabel(names=['cat', 'dog', 'bird'])" in text
    for name in ("image", "label", "score", "name"):
        assert f"<code>{name}</code>" in page
    for label in NAMES:
        assert f"<tr><td>{label}</td><td style='text-align:right'>100</td>" in page
    thumbs = images_of(page)
    assert len(thumbs) == STRIP_LENGTH
    assert all(max(thumb.size) <= THUMB_PX for thumb in thumbs)
    assert text.count("cat") >= STRIP_LENGTH // 3  # captions under the strip: the label names


def test_a_view_card_counts_its_own_rows(pets: CachedDataset) -> None:
    view = pets.filter(label="bird")[:5]
    page = view._repr_html_()
    text = "".join(assert_inert(page).text)
    assert f"5 of 300 rows (view) from 6 shards of {format_size(pets.nbytes)}" in text  # the size is the shards'
    assert "<tr><td>bird</td><td style='text-align:right'>5</td>" in page
    assert len(images_of(page)) == 5
    assert "<figcaption>bird</figcaption>" in page
    assert "<figcaption>cat</figcaption>" not in page


def test_hostile_names_and_text_are_shown_as_text(tmp_path: Path, jpegs: list[bytes]) -> None:
    features = Features(image=Image(), label=ClassLabel(names=HOSTILE), **{HOSTILE[1]: Value("string")})
    rows = [{"image": jpegs[i], "label": i % len(HOSTILE), HOSTILE[1]: HOSTILE[0]} for i in range(10)]
    ds = se.build(rows, features, name="hostile", home=tmp_path, progress=False, description=HOSTILE[2],
                  license=HOSTILE[3], metadata={"note": HOSTILE[0]})  # fmt: skip
    page = ds._repr_html_()
    assert_inert(page, *HOSTILE)
    for raw in ("<script>", "<img src=x", "onmouseover='", 'onclick="'):
        assert raw not in page


def test_a_long_description_is_cut(tmp_path: Path) -> None:
    description = "word " * 400
    ds = se.build([{"x": 1}], Features(x=Value("int64")), name="long", home=tmp_path, progress=False,
                  description=description)  # fmt: skip
    page = ds._repr_html_()
    assert description[:500] in page
    assert description[:501] not in page


def test_many_classes_show_the_largest_and_count_the_rest(tmp_path: Path) -> None:
    features = Features(label=ClassLabel(num_classes=20))
    rows = [{"label": c} for c in range(20) for _ in range(c + 1)]  # class c has c + 1 rows
    ds = se.build(rows, features, name="many", home=tmp_path, progress=False)
    page = ds._repr_html_()
    shown = [c for c in range(20) if f"<tr><td>{c}</td>" in page]
    assert shown == list(range(8, 20))  # the 12 largest
    assert "... 8 more classes" in page


def test_a_card_without_images_or_labels_has_no_strip_or_counts(tmp_path: Path) -> None:
    ds = se.build([{"x": i} for i in range(3)], Features(x=Value("int64")), name="plain", home=tmp_path,
                  progress=False)  # fmt: skip
    page = ds._repr_html_()
    assert_inert(page, "plain@", "3 rows")
    assert "<img" not in page
    assert "<th>rows</th>" not in page
    with pytest.warns(se.EmptyBuildWarning):
        empty = se.build([], Features(image=Image(), label=ClassLabel(names=NAMES)), name="none", home=tmp_path,
                         progress=False)  # fmt: skip
    assert "<img" not in empty._repr_html_()
    assert "0 rows" in empty._repr_html_()


def test_an_unreadable_image_is_marked_and_the_rest_still_shown(tmp_path: Path, jpegs: list[bytes]) -> None:
    import numpy as np
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(np.arange(256, dtype=np.uint8).reshape(16, 16)).save(buffer, format="PNG")
    damaged = bytearray(buffer.getvalue())
    start = damaged.index(b"IDAT") + 8
    damaged[start : start + 8] = b"\x00" * 8  # header and end intact (so it is stored), image data damaged
    broken = bytes(damaged)
    features = Features(image=Image(), label=ClassLabel(names=NAMES))
    rows = [{"image": broken, "label": 0}] + [{"image": jpegs[i], "label": 1} for i in range(1, 4)]
    ds = se.build(rows, features, name="broken", home=tmp_path, progress=False)
    page = ds._repr_html_()
    assert page.count("unreadable") == 1
    assert len(images_of(page)) == 3


def test_an_identical_diff_card_is_only_its_header(pets: CachedDataset) -> None:
    diff = se.compare(pets, se.load("pets", home=pets.cache_dir.parents[2]))
    page = diff._repr_html_()
    assert page == diff_card(diff)
    text = "".join(assert_inert(page).text)
    assert text == f"pets@{pets.version} → pets@{pets.version}identical (pets@{pets.version} == pets@{pets.version})"


def test_the_diff_card_shows_metadata_schema_label_counts_and_moves(tmp_path: Path) -> None:
    old = Features(label=ClassLabel(names=["cat", "dog"]), x=Value("int64"))
    new = Features(label=ClassLabel(names=["cat", "dog"]), x=Value("int64"), note=Value("string"))
    a = se.build([{"label": i % 2, "x": i} for i in range(6)], old, name="d", home=tmp_path, progress=False,
                 description=HOSTILE[0])  # fmt: skip
    b = se.build([{"label": 1, "x": i, "note": "n"} for i in range(6)], new, name="d", home=tmp_path,
                 progress=False, description=HOSTILE[1])  # fmt: skip
    page = se.compare(a, b)._repr_html_()
    assert_inert(page, HOSTILE[0], HOSTILE[1], "columns_added", "note")
    assert "<th>metadata</th><th>before</th><th>after</th>" in page
    assert "<th>schema</th><th>change</th>" in page
    assert "<tr><td>cat</td><td style='text-align:right'>3</td><td style='text-align:right'>0</td></tr>" in page
    assert "<tr><td>cat</td><td>dog</td><td style='text-align:right'>3</td></tr>" in page  # 3 rows moved


def test_the_diff_card_escapes_keys_and_lists_at_most_its_share_of_changed_rows(
    tmp_path: Path, jpegs: list[bytes]
) -> None:
    features = Features(image=Image(), label=ClassLabel(names=["a", "b"]))
    keys = [f"{HOSTILE[i % len(HOSTILE)]}-{i}" for i in range(CHANGED_ROWS_SHOWN + 3)]
    a = se.build([(k, {"image": jpegs[i], "label": 0}) for i, k in enumerate(keys)], features, name="k",
                 home=tmp_path, progress=False)  # fmt: skip
    b = a.relabel(dict.fromkeys(range(len(keys)), "b")).save()
    page = se.compare(a, b)._repr_html_()
    assert_inert(page, *keys[:CHANGED_ROWS_SHOWN], "... 3 more changed rows")
    assert keys[-1] not in "".join(_Markup(page).text)
    assert len(images_of(page)) == 2 * CHANGED_ROWS_SHOWN  # before and after of each row shown
    assert page.count("label: a → b") == CHANGED_ROWS_SHOWN


def test_repeated_keys_and_changed_bytes_are_shown_as_text(tmp_path: Path, jpegs: list[bytes]) -> None:
    features = Features(image=Image())
    key = HOSTILE[0]
    # builds refuse repeated keys, but views of one version can repeat a row
    a = se.build([(key, {"image": jpegs[1]})], features, name="r", home=tmp_path, progress=False)
    b = se.build([(key, {"image": jpegs[2]})], features, name="r", home=tmp_path, progress=False)
    page = se.compare(a.select([0, 0]), b.select([0, 0]))._repr_html_()
    markup = assert_inert(page, f"repeated keys in a: {key}", f"repeated keys in b: {key}")
    assert f"image: <{len(jpegs[1])} bytes> → <{len(jpegs[2])} bytes>" in "".join(markup.text)
