"""``show(frame)``: PIL images a user holds are drawn within the thumbnail budget and left as they were."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import Features, Image
from stable_explore.display import show
from tests.reliability.trials import png_bomb


def _jpeg(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), "red").save(buffer, format="JPEG")
    return buffer.getvalue()


def test_a_lazily_opened_image_over_the_budget_is_refused_in_its_cell_and_never_decoded() -> None:
    image = PILImage.open(io.BytesIO(png_bomb(9000, 9000)))  # 81 MP, under PIL's bomb limit
    html = show(pd.DataFrame({"image": [image]}))._repr_html_()
    assert "9000x9000 image: too large to draw a thumbnail" in html
    assert "<img " not in html
    assert image.tile, "the user's image was decoded"


def test_a_big_lazily_opened_jpeg_is_drafted_from_its_bytes_and_the_users_image_is_untouched() -> None:
    image = PILImage.open(io.BytesIO(_jpeg(6000, 5000)))  # 30 MP: over the budget unless drafted
    html = show(pd.DataFrame({"image": [image]}), size=64)._repr_html_()
    assert html.count("<img ") == 1
    assert image.tile, "the user's image was decoded"
    assert image.size == (6000, 5000)  # not drafted in place either


def test_images_from_a_dataset_in_a_frame_are_drawn_and_bounded(tmp_path: Path) -> None:
    ds = se.build(
        [{"image": _jpeg(64, 48)}, {"image": png_bomb(9000, 9000)}],
        Features(image=Image()),
        name="f",
        home=tmp_path,
        progress=False,
    )
    frame = ds.to_pandas(images="pil")
    html = show(frame)._repr_html_()
    assert html.count("<img ") == 1
    assert "too large to draw a thumbnail" in html
    assert all(image.tile for image in frame["image"])


def test_a_decoded_image_is_shrunk_without_changing_it() -> None:
    image = PILImage.new("P", (300, 100))
    html = show(pd.DataFrame({"image": [image]}), size=60)._repr_html_()
    assert html.count("<img ") == 1
    assert image.size == (300, 100)
    assert image.mode == "P"
