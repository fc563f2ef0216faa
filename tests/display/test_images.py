"""Thumbnails: sizes, formats, EXIF orientation, tiny images, data URIs."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image as PILImage


def test_small_web_images_are_sent_as_stored_and_large_ones_shrunk(tmp_path: Path, jpegs: list[bytes]) -> None:
    from stable_explore.display.images import thumbnail_bytes

    assert thumbnail_bytes(jpegs[0], 128) == (jpegs[0], "image/jpeg")
    big = io.BytesIO()
    PILImage.new("RGB", (600, 300), (200, 10, 10)).save(big, format="JPEG")
    data, mime = thumbnail_bytes(big.getvalue(), 128)
    assert mime == "image/jpeg"
    assert PILImage.open(io.BytesIO(data)).size == (128, 64)
    # a photo taken sideways (EXIF orientation 6) is turned upright, as browsers show it
    exif = PILImage.Exif()
    exif[0x0112] = 6
    sideways = io.BytesIO()
    PILImage.new("RGB", (100, 50), (0, 0, 255)).save(sideways, format="JPEG", exif=exif.tobytes())
    data, _ = thumbnail_bytes(sideways.getvalue(), 128)
    assert PILImage.open(io.BytesIO(data)).size == (50, 100)
    cmyk = io.BytesIO()
    PILImage.new("CMYK", (20, 20)).save(cmyk, format="JPEG")
    data, _ = thumbnail_bytes(cmyk.getvalue(), 128)
    assert PILImage.open(io.BytesIO(data)).mode == "RGB"  # re-encoded: browsers differ on CMYK JPEGs
