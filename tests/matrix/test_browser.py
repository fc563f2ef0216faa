"""The browser's page, thumbnail and detail messages for every cell, at the Python level (no browser)."""

from __future__ import annotations

import io

import pytest
from PIL import Image as PILImage

import stable_explore as se
from tests.matrix.checks import canon
from tests.matrix.conftest import Cell, cell_params
from tests.matrix.model import IMAGE_MODES

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

from stable_explore.widgets._images import make_thumbnails


@pytest.mark.parametrize("cell", cell_params(), indirect=True)
def test_page_and_detail_messages(cell: Cell) -> None:
    ds, model = cell.ds, cell.model()
    browser = ds.browse(page_size=24)
    content, buffers = browser.page_message()
    assert content["type"] == "page"
    assert content["num_rows"] == len(model)
    cells = content["cells"]
    assert [c["key"] for c in cells] == [row["__key__"] for row in model]
    assert [c["shard"] for c in cells] == [i // 8 for i in range(len(model))]
    label = cell.fset.label_column
    if label is not None:
        names = ds.features[label].names
        assert [names[c["label"]] for c in cells] == [row[label] for row in model]
    image_column = next((n for n, f in ds.features.items() if isinstance(f, se.Image)), None)
    if image_column is not None:
        with_image = [c for c, row in zip(cells, model, strict=True) if row[image_column] is not None]
        assert len(buffers) == len(with_image)
        for c in with_image:
            thumb = PILImage.open(io.BytesIO(buffers[c["buffer"]]))
            assert max(thumb.size) <= browser.thumb_size
    for row in (0, 7, 23):
        detail, images = browser.detail_message(row)
        assert detail["type"] == "detail"
        assert detail["key"] == model[row]["__key__"]
        assert [name for name, _ in detail["fields"]] == list(ds.features)
        if image_column is not None and model[row][image_column] is not None:
            (data,) = images
            shown = PILImage.open(io.BytesIO(data))
            assert shown.size == model[row][image_column].size
    with pytest.raises(se.RowIndexError, match="out of range"):
        browser.detail_message(len(model))


@pytest.mark.parametrize("cell", cell_params(["images"]), indirect=True)
@pytest.mark.parametrize("mode", IMAGE_MODES)
def test_thumbnails_of_every_image_mode(cell: Cell, mode: str) -> None:
    stored = cell.ds.to_arrow(columns=[mode]).column(0).to_pylist()
    thumbs = make_thumbnails(stored, cell.ds.features[mode], 16)  # what a page message is made of
    for row, (value, thumb) in enumerate(zip(stored, thumbs, strict=True)):
        if value is None:
            assert thumb is None
            continue
        assert thumb is not None, f"{mode}: row {row} has no thumbnail"
        data, mime = thumb
        assert mime.startswith("image/")
        image = PILImage.open(io.BytesIO(data))
        assert max(image.size) <= 16
        original = canon(cell.ds.features[mode], value)
        assert original[0] == mode  # the stored image kept its mode
