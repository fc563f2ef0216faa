"""Checking encoded image bytes before they are stored: a readable header, a size within a limit, not cut short.

The size is read from the header only (PNG's IHDR, JPEG's start-of-frame, GIF's screen
descriptor; PIL's parser for every other format), so a decompression bomb (a small file
that declares 20000x20000 pixels) is refused without decoding it. The limit is PIL's own
bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``) unless the feature sets ``max_pixels``. PNG and
JPEG files must also end as their formats end (IEND, EOI), which catches truncated files.

PIL's ``Image.open`` costs about 80 microseconds per small JPEG, a minute per million
images, so the three common formats are parsed here (a few microseconds); PIL parses the rest.

Examples
--------
>>> import io, numpy as np
>>> from PIL import Image as PILImage
>>> buffer = io.BytesIO()
>>> PILImage.fromarray(np.zeros((4, 6), dtype=np.uint8)).save(buffer, format="PNG")
>>> image_header(buffer.getvalue())
('PNG', 6, 4)
>>> image_header(b"GIF89a")
Traceback (most recent call last):
...
stable_explore.errors.EncodingError: not an image that can be stored: the GIF header is cut short (6 bytes)
"""

from __future__ import annotations

import io
import struct
import warnings
from typing import Any

from stable_explore.errors import EncodingError

__all__ = ["check_image_bytes", "check_pixel_count", "default_max_pixels", "image_header", "too_large_message"]

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG_SOF = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF))
_JPEG_NO_LENGTH = frozenset((0x01, 0xD8, *range(0xD0, 0xD8)))
_TAIL = 4096  # the end marker must be within this many bytes of the end (some writers pad the file)


def default_max_pixels() -> int | None:
    """PIL's decompression-bomb limit, read now (a user may have changed it); None when PIL's check is off."""
    from PIL import Image as PILImage

    limit = PILImage.MAX_IMAGE_PIXELS
    return int(limit) if limit else None


def _broken(reason: str) -> EncodingError:
    return EncodingError(f"not an image that can be stored: {reason}")


def _png(data: bytes) -> tuple[str, int, int]:
    if len(data) < 33 or data[12:16] != b"IHDR":
        msg = f"the PNG header has no IHDR chunk ({len(data)} bytes)"
        raise _broken(msg)
    width, height = struct.unpack_from(">II", data, 16)
    if data.rfind(b"IEND", max(0, len(data) - _TAIL)) < 0:
        msg = f"the PNG has no IEND chunk at its end: the file is truncated ({len(data)} bytes)"
        raise _broken(msg)
    return "PNG", width, height


def _jpeg(data: bytes) -> tuple[str, int, int]:
    position, end = 2, len(data)
    while position + 4 <= end:  # walks the header's markers: a handful per file, each a few operations
        if data[position] != 0xFF:
            msg = f"the JPEG header is damaged at byte {position}"
            raise _broken(msg)
        marker = data[position + 1]
        if marker in _JPEG_SOF:
            if position + 9 > end:
                break
            height = data[position + 5] << 8 | data[position + 6]
            width = data[position + 7] << 8 | data[position + 8]
            if data.rfind(b"\xff\xd9", max(0, end - _TAIL)) < 0:
                msg = f"the JPEG has no end-of-image marker: the file is truncated ({end} bytes)"
                raise _broken(msg)
            return "JPEG", width, height
        if marker == 0xFF:  # fill byte
            position += 1
        elif marker in _JPEG_NO_LENGTH:
            position += 2
        elif marker == 0xDA:  # start of scan before any frame header
            break
        else:
            position += 2 + (data[position + 2] << 8 | data[position + 3])
    msg = f"the JPEG has no frame header (image size) in its {end} bytes: truncated or damaged"
    raise _broken(msg)


def _gif(data: bytes) -> tuple[str, int, int]:
    if len(data) < 13:
        msg = f"the GIF header is cut short ({len(data)} bytes)"
        raise _broken(msg)
    width, height = struct.unpack_from("<HH", data, 6)
    return "GIF", width, height


def _with_pil(data: bytes) -> tuple[str, int, int]:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)  # the limit is applied by the caller
            with PILImage.open(io.BytesIO(data)) as image:
                size = image.size
                kind = image.format or "image"
                image.verify()
    except PILImage.DecompressionBombError as exc:
        msg = f"PIL refuses it as a decompression bomb: {exc}"
        raise _broken(msg) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, struct.error) as exc:
        msg = f"PIL cannot read it (first bytes {data[:8]!r}): {exc}"
        raise _broken(msg) from exc
    return kind, size[0], size[1]


def image_header(data: bytes) -> tuple[str, int, int]:
    """(format, width, height) from the header of encoded image bytes, without decoding pixels.

    Raises
    ------
    EncodingError
        The bytes are no image, the header is damaged, or a PNG or JPEG is cut short.
    """
    try:
        if data.startswith(_PNG):
            return _png(data)
        if data.startswith(b"\xff\xd8\xff"):
            return _jpeg(data)
        if data.startswith((b"GIF87a", b"GIF89a")):
            return _gif(data)
    except struct.error as exc:
        msg = f"the header is cut short ({len(data)} bytes)"
        raise _broken(msg) from exc
    return _with_pil(data)


def check_image_bytes(data: bytes, max_pixels: int | None = None) -> None:
    """Refuse bytes that are no image, are cut short, or declare more pixels than ``max_pixels``.

    ``max_pixels`` None means PIL's bomb limit; 0 turns the size check off.
    """
    kind, width, height = image_header(data)
    limit = default_max_pixels() if max_pixels is None else max_pixels
    if width <= 0 or height <= 0:
        msg = f"the {kind} header declares a size of {width}x{height}"
        raise _broken(msg)
    if limit and width * height > limit:
        msg = too_large_message(kind, width, height, limit)
        raise EncodingError(msg)


def too_large_message(kind: str, width: int, height: int, limit: int) -> str:
    """The error text for an image whose declared size is over the pixel limit."""
    return (
        f"the {kind} image declares {width}x{height} = {width * height:,} pixels, over the limit of {limit:,} "
        "(PIL's decompression-bomb limit unless Image(max_pixels=...) says otherwise): a decompression bomb, or "
        "an image to shrink first; pass Image(max_pixels=N) to store bigger images on purpose"
    )


def check_pixel_count(kind: str, size: Any, max_pixels: int | None) -> None:
    """The same size check for an image given as pixels (a PIL image or an array): ``size`` is (width, height)."""
    limit = default_max_pixels() if max_pixels is None else max_pixels
    width, height = int(size[0]), int(size[1])
    if limit and width * height > limit:
        msg = too_large_message(kind, width, height, limit)
        raise EncodingError(msg)
