"""Which image format some bytes hold, from their first bytes."""

from __future__ import annotations

import io

import pytest
from PIL import Image as PILImage

from stable_explore.schema.image_formats import SIGNATURES, ImageKind, sniff


@pytest.mark.parametrize(
    ("fmt", "mode", "kind"),
    [
        ("JPEG", "RGB", ImageKind("JPEG", ".jpg", "image/jpeg", True)),
        ("PNG", "RGBA", ImageKind("PNG", ".png", "image/png", True)),
        ("GIF", "P", ImageKind("GIF", ".gif", "image/gif", True)),
        ("WEBP", "RGB", ImageKind("WEBP", ".webp", "image/webp", True)),
        ("BMP", "RGB", ImageKind("BMP", ".bmp", "image/bmp", False)),
        ("TIFF", "RGB", ImageKind("TIFF", ".tiff", "image/tiff", False)),
    ],
)
def test_every_format_pil_writes_is_recognised(fmt: str, mode: str, kind: ImageKind) -> None:
    buffer = io.BytesIO()
    PILImage.new(mode, (4, 4)).save(buffer, format=fmt)
    data = buffer.getvalue()
    assert sniff(data) == kind
    assert sniff(memoryview(data)) == kind


def test_big_endian_tiff_and_gif87a() -> None:
    assert sniff(b"MM\x00*" + bytes(8)).name == "TIFF"  # type: ignore[union-attr]
    assert sniff(b"GIF87a" + bytes(8)).name == "GIF"  # type: ignore[union-attr]


@pytest.mark.parametrize("data", [b"", b"\xff\xd8", b"not an image", b"RIFF\x00\x00\x00\x00WAVEfmt ", b"%PDF-1.7"])
def test_anything_else_is_none(data: bytes) -> None:
    assert sniff(data) is None


def test_the_signatures_are_exported_for_fast_checks() -> None:
    assert b"\xff\xd8\xff" in SIGNATURES
    assert b"\x89PNG\r\n\x1a\n" in SIGNATURES
