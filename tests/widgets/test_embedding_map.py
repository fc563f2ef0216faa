"""The embedding map's kernel side: points as binary buffers, selections from the page and from code,
hover thumbnails, similar rows, edits from a selection, and the link to a browser."""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage
from traitlets import TraitError

import stable_explore as se
from stable_explore import CachedDataset
from stable_explore.errors import InvalidOptionError, RowIndexError
from stable_explore.signals import pca_2d, rows_in_box

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from stable_explore.widgets import EmbeddingMap
from stable_explore.widgets._thumbs import ThumbnailCache
from stable_explore.widgets.embedding_map import PointsMessage, ThumbMessage
from tests.typed_json import conforms
from tests.widgets.commands import invoke


class Sent:
    """What the widget sends to the page (its real ``send``, recorded)."""

    def __init__(self, widget: EmbeddingMap) -> None:
        self.messages: list[tuple[dict[str, Any], list[bytes]]] = []
        original = widget.send

        def record(content: dict[str, Any], buffers: Any = None) -> None:
            self.messages.append((content, list(buffers or [])))
            original(content, buffers)

        widget.send = record  # type: ignore[method-assign]

    def of(self, kind: str) -> list[tuple[dict[str, Any], list[bytes]]]:
        """Pushes of type ``kind``, and replies whose response is of that type."""
        said = [(m.get("response", m), buffers) for m, buffers in self.messages]
        return [(m, buffers) for m, buffers in said if m.get("type") == kind]


def page_says(widget: EmbeddingMap, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
    """A request from the page (its ``type`` is the request's name), through the widget's own handler."""
    msg = {k: v for k, v in content.items() if k != "type"}
    invoke(widget, content["type"], msg, buffers)


def test_points_travel_as_float32_and_uint8_label_code_buffers(pets: CachedDataset) -> None:
    vectors = np.random.default_rng(0).normal(size=(len(pets), 5))
    widget = EmbeddingMap(pets, vectors)
    sent = Sent(widget)
    page_says(widget, {"type": "ready"})
    [(content, buffers)] = sent.of("points")
    assert content == {"type": "points", "count": 300, "codes": "uint8"}
    conforms(content, PointsMessage, "points")
    points = np.frombuffer(buffers[0], dtype=np.float32).reshape(-1, 2)
    np.testing.assert_array_equal(points, pca_2d(vectors))
    assert len(buffers[1]) == 300  # one byte a point: class index + 1, 0 for no label
    codes = np.frombuffer(buffers[1], dtype=np.uint8)
    assert (codes.astype(int) - 1).tolist() == pets.arrow_column("label").to_pylist()
    assert buffers[2] == b""  # nothing selected
    assert widget.class_names == list(pets.features["label"].names)
    assert sum(widget.label_counts) == 300
    # nothing point-like is in the synced state
    state = widget.get_state()
    assert "selected" not in state
    assert "points" not in state


def test_a_selection_from_the_page_lands_in_selected_without_an_echo(pets: CachedDataset) -> None:
    widget = EmbeddingMap(pets, np.random.default_rng(1).normal(size=(len(pets), 3)))
    sent = Sent(widget)
    shape = {"kind": "box", "x0": -1.0, "y0": -1.0, "x1": 1.0, "y1": 1.0}
    page_says(widget, {"type": "select", "shape": shape}, [np.array([9, 4, 120], dtype=np.int32).tobytes()])
    assert widget.selected == [4, 9, 120]
    assert widget.num_selected == 3
    assert widget.selection_shape == shape
    assert sent.of("selection") == []  # the page drew it already
    assert widget.selection().keys() == ["pet-00004", "pet-00009", "pet-00120"]
    # from code: the page is told, as an Int32Array
    widget.selected = [7, 2]
    [(_, buffers)] = sent.of("selection")
    assert np.frombuffer(buffers[0], dtype=np.int32).tolist() == [2, 7]
    with pytest.raises(RowIndexError, match="row 300 is out of range for 300 rows"):
        widget.selected = [1, 300]


def test_box_and_lasso_from_code_use_the_projection(pets: CachedDataset) -> None:
    vectors = np.random.default_rng(2).normal(size=(len(pets), 8))
    widget = EmbeddingMap(pets, vectors)
    points = pca_2d(vectors)
    widget.select_box(0, 0, 10, 10)
    expected = np.flatnonzero((points[:, 0] >= 0) & (points[:, 1] >= 0)).tolist()
    assert widget.selected == expected
    assert widget.selection_shape["kind"] == "box"
    widget.select_lasso([[0, 0], [10, 0], [10, 10], [0, 10]])  # the same quadrant, as a lasso
    assert widget.selected == expected
    assert widget.selection_shape["kind"] == "lasso"
    assert rows_in_box(widget.points, 0, 0, 10, 10).tolist() == expected


def test_hover_sends_the_rows_thumbnail_from_the_shared_cache(pets: CachedDataset) -> None:
    cache = ThumbnailCache()
    widget = EmbeddingMap(pets, np.zeros((len(pets), 2)), cache=cache, thumb_size=64)
    sent = Sent(widget)
    page_says(widget, {"type": "hover", "row": 17})
    [(content, buffers)] = sent.of("thumb")
    assert content == {"type": "thumb", "row": 17, "key": "pet-00017", "label": pets[17]["label"], "mime": "image/jpeg"}
    conforms(content, ThumbMessage, "thumb")
    thumb = PILImage.open(io.BytesIO(buffers[0]))
    assert thumb.format == "JPEG"
    assert max(thumb.size) <= 64
    page_says(widget, {"type": "hover", "row": 17})
    assert cache.hits == 1  # the second hover decoded nothing
    page_says(widget, {"type": "hover", "row": 999})
    assert widget.status == "error: RowIndexError: row 999 is out of range for 300 rows of " + pets.ref


def test_a_bug_in_a_map_handler_shows_in_the_status_and_logs_its_traceback(
    pets: CachedDataset, caplog: pytest.LogCaptureFixture
) -> None:
    widget = EmbeddingMap(pets, np.zeros((len(pets), 2)))
    with caplog.at_level(logging.INFO, logger="stable_explore"):
        page_says(widget, {"type": "hover"})  # a message without its row: a KeyError, nothing the user did
    assert widget.status == "error: KeyError: 'row'"
    [record] = [r for r in caplog.records if r.name == "stable_explore.widgets"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert record.exc_info[0] is KeyError


def test_double_click_selects_a_row_and_its_nearest_neighbours(pets: CachedDataset) -> None:
    vectors = np.zeros((len(pets), 2))
    vectors[:, 0] = np.arange(len(pets)) ** 1.5  # row r's nearest rows are r-1, r+1, r-2, ...
    widget = EmbeddingMap(pets, vectors)
    widget.neighbours = 3
    page_says(widget, {"type": "similar", "row": 50})
    assert widget.selected == [48, 49, 50, 51]
    assert widget.selection_shape == {"kind": "similar", "row": 50, "rows": [50, 49, 51, 48]}
    assert widget.similar(0, k=2).tolist() == [1, 2]


def test_edits_from_a_selection_are_drafts_that_save(pets: CachedDataset) -> None:
    widget = EmbeddingMap(pets, np.random.default_rng(3).normal(size=(len(pets), 4)))
    widget.selected = [3, 5]
    draft = widget.relabel_selection("dog")
    widget.selected = [10]
    saved = widget.drop_selection(draft).save("map cleanup", progress=False)
    assert len(saved) == 299
    assert saved.metadata["message"] == "map cleanup"
    labels = saved.with_format("python")
    names = pets.features["label"].names
    assert names[labels[3]["label"]] == "dog"
    assert names[labels[5]["label"]] == "dog"


def test_the_selection_reaches_a_linked_browser(pets: CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    widget = EmbeddingMap(pets, np.random.default_rng(4).normal(size=(len(pets), 4)), browser=browser)
    page_says(widget, {"type": "select", "shape": {"kind": "lasso"}}, [np.array([40, 8], dtype=np.int32).tobytes()])
    assert browser.selected == [8, 40]
    if hasattr(browser, "show_rows"):  # the browser's grid shows only the chosen rows
        assert browser.page_rows().tolist() == [8, 40]
    widget.neighbours = 2
    widget.select_similar(5)
    assert browser.selected == sorted([5, *widget.similar(5, 2).tolist()])
    if hasattr(browser, "show_rows"):  # closest first, under a title that says so
        assert browser.page_rows().tolist() == [5, *widget.similar(5, 2).tolist()]
        assert browser.subset == "row 5 and the 2 rows most like it"
    widget.selected = []
    assert browser.selected == []
    if hasattr(browser, "show_rows"):
        assert browser.num_rows == 300
    other = pets.select([1, 2]).browse()
    with pytest.raises(InvalidOptionError, match="link a browser of the same rows"):
        widget.link(other)


def test_label_codes_widen_with_the_classes_and_mark_missing_labels(home: Path) -> None:
    names = [f"class {i}" for i in range(300)]  # more than a byte holds
    rows = [{"label": i * 7 % 300 if i % 5 else None} for i in range(40)]
    ds = se.build(rows, se.Features(label=se.ClassLabel(names=names)), name="wide", home=home, progress=False)
    widget = EmbeddingMap(ds, np.random.default_rng(5).normal(size=(40, 3)))
    content, buffers = widget.points_message()
    assert content["codes"] == "uint16"
    codes = np.frombuffer(buffers[1], dtype=np.uint16)
    assert codes.tolist() == [0 if i % 5 == 0 else i * 7 % 300 + 1 for i in range(40)]


def test_a_large_selection_from_the_page_reaches_a_linked_browser_as_plain_ints(pets: CachedDataset) -> None:
    """The page's rows (an Int32Array) become lists of Python ints, checked in numpy, on both widgets."""
    browser = pets.browse(page_size=24)
    widget = EmbeddingMap(pets, np.random.default_rng(6).normal(size=(len(pets), 4)), browser=browser)
    rows = np.array([299, *range(0, 290, 2), 4], dtype=np.int32)  # unsorted, one repeat
    page_says(widget, {"type": "select", "shape": {"kind": "lasso"}}, [rows.tobytes()])
    expected = sorted(set(rows.tolist()))
    assert widget.selected == expected
    assert browser.selected == expected
    assert {type(r) for r in widget.selected} | {type(r) for r in browser.selected} == {int}
    browser.selected = np.array([5, 3], dtype=np.int64)  # an array from code: kept in its order
    assert browser.selected == [5, 3]
    with pytest.raises(TraitError, match=r"expected row positions \(whole numbers\), not 'x' \(str\) at 1"):
        browser.selected = [1, "x"]
    with pytest.raises(TraitError, match=r"not 2.5 \(float\) at 0"):
        widget.selected = [2.5]


def test_an_embedding_column_and_a_label_of_choice(home: Path) -> None:
    features = se.Features(
        emb=se.Sequence(se.Value("float32"), length=3),
        kind=se.ClassLabel(names=["x", "y"]),
        note=se.Value("string"),
    )
    rows = [{"emb": [i, i % 3, 0], "kind": i % 2, "note": "n"} for i in range(12)]
    ds = se.build(rows, features, name="emb", home=home, progress=False)
    widget = EmbeddingMap(ds, "emb")
    assert widget.num_points == 12
    assert widget.class_names == ["x", "y"]
    assert not widget.has_images
    assert "12 points · PCA of 3 dimensions" in widget.title
    with pytest.raises(InvalidOptionError, match="label='note' is not a ClassLabel column; those are \\['kind'\\]"):
        EmbeddingMap(ds, "emb", label="note")
    assert repr(widget).endswith("pca, 12 points, 0 selected)")
