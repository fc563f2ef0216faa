r"""Which image format some bytes hold, from their first bytes: one table for every use.

Examples
--------
>>> sniff(b"\x89PNG\r\n\x1a\n....")
ImageKind(name='PNG', extension='.png', mime='image/png', browser=True)
>>> sniff(b"not an image") is None
True
"""

from __future__ import annotations

from typing import NamedTuple


class ImageKind(NamedTuple):
    """An image format known by its first bytes: its name, file extension, MIME type, and whether browsers show it."""

    name: str
    extension: str
    mime: str
    browser: bool  # every browser shows it as it is


_SIGNATURES: tuple[tuple[bytes, ImageKind], ...] = (
    (b"\xff\xd8\xff", ImageKind("JPEG", ".jpg", "image/jpeg", True)),
    (b"\x89PNG\r\n\x1a\n", ImageKind("PNG", ".png", "image/png", True)),
    (b"GIF87a", ImageKind("GIF", ".gif", "image/gif", True)),
    (b"GIF89a", ImageKind("GIF", ".gif", "image/gif", True)),
    (b"BM", ImageKind("BMP", ".bmp", "image/bmp", False)),
    (b"II*\x00", ImageKind("TIFF", ".tiff", "image/tiff", False)),
    (b"MM\x00*", ImageKind("TIFF", ".tiff", "image/tiff", False)),
)
SIGNATURES = tuple(signature for signature, _ in _SIGNATURES)
"""Leading bytes of the formats above (WEBP needs two checks: see ``sniff``)."""
_WEBP = ImageKind("WEBP", ".webp", "image/webp", True)


def sniff(data: bytes | memoryview) -> ImageKind | None:
    """The format of encoded image bytes, or None if the first bytes match no known format."""
    head = bytes(data[:12])
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _WEBP
    return None
