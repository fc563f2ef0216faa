"""The Image feature: what it stores from bytes, files, PIL images and arrays, and what it refuses."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

from stable_explore import EncodingError, Image
from tests.conftest import jpeg_bytes


def test_image_keeps_jpeg_bytes_from_bytes_and_from_files(tmp_path: Path) -> None:
    jpeg = jpeg_bytes(1)
    path = tmp_path / "a.jpg"
    path.write_bytes(jpeg)
    feature = Image()
    assert feature.encode_value(jpeg) == jpeg
    assert feature.encode_value(path) == jpeg
    assert feature.encode_value(str(path)) == jpeg
    assert feature.encode_value({"path": str(path)}) == jpeg
    assert feature.encode_column([jpeg, jpeg]).to_pylist() == [jpeg, jpeg]


def test_image_from_pil_keeps_its_format_and_arrays_become_png(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(jpeg_bytes(2))
    with PILImage.open(path) as opened:
        stored = Image().encode_value(opened)
    assert stored[:3] == b"\xff\xd8\xff"
    rgba = PILImage.new("RGBA", (4, 4), (1, 2, 3, 4))
    assert Image().encode_value(rgba)[:4] == b"\x89PNG"
    gray = np.zeros((5, 6), dtype=np.uint8)
    png = Image().encode_value(gray)
    assert png[:4] == b"\x89PNG"
    assert PILImage.open(io.BytesIO(png)).size == (6, 5)


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (b"not an image at all", "not an image"),
        (np.zeros((4, 4, 3), dtype=np.float64), "uint8"),
        (12, "expected image bytes"),
        ({"other": 1}, "'bytes' or 'path'"),
    ],
)
def test_image_rejects_what_it_cannot_store(value: object, needle: str) -> None:
    with pytest.raises(EncodingError, match=needle):
        Image().encode_value(value)


def test_missing_image_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(EncodingError, match=r"nope\.jpg"):
        Image().encode_value(tmp_path / "nope.jpg")


@pytest.mark.parametrize("mode", ["CMYK", "YCbCr", "LAB", "F", "I"])
def test_a_pil_image_in_a_mode_png_cannot_hold_is_stored_losslessly(mode: str) -> None:
    # "I" is 32-bit grey (a 16-bit PNG clips it; Pillow 13 refuses to write it as PNG at all)
    bytes_per_pixel = {"CMYK": 4, "YCbCr": 3, "LAB": 3, "F": 4, "I": 4}[mode]
    data = np.random.default_rng(0).integers(0, 100, 5 * 6 * bytes_per_pixel, dtype=np.uint8).tobytes()
    image = PILImage.frombytes(mode, (6, 5), data)
    stored = Image().encode_value(image)
    with PILImage.open(io.BytesIO(stored)) as back:
        assert back.mode == mode
        assert back.tobytes() == image.tobytes()


def test_a_pil_image_in_a_mode_no_format_holds_says_how_to_store_it() -> None:
    image = PILImage.new("HSV", (6, 5))
    with pytest.raises(EncodingError, match=r"mode HSV.*convert it first, for example image\.convert\('RGB'\)"):
        Image().encode_value(image)
