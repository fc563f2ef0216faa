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
from pathlib import Path
from typing import Any

from stable_explore.errors import EncodingError

__all__ = [
    "check_image_bytes",
    "check_pixel_count",
    "default_max_pixels",
    "displayed_size",
    "file_displayed_size",
    "image_header",
    "jpeg_orientation",
    "too_large_message",
]

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


_TURNED = frozenset((5, 6, 7, 8))  # EXIF orientations that swap width and height (a quarter turn, maybe mirrored)
_HEAD_BYTES = 1 << 16  # a file's first bytes read for its size: a JPEG's EXIF block is at most 64 KB


def jpeg_orientation(data: bytes) -> int:
    """The EXIF orientation (1..8) of JPEG bytes, 1 when there is none; read from the header, nothing decoded.

    6 and 8 are photos taken holding the camera sideways: viewers (and ``ImageOps.exif_transpose``)
    turn them a quarter, so the image shown is as wide as the stored one is tall.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> exif = Image.Exif()
    >>> exif[0x0112] = 6
    >>> buffer = io.BytesIO()
    >>> Image.new("RGB", (4, 2)).save(buffer, format="JPEG", exif=exif)
    >>> jpeg_orientation(buffer.getvalue()), displayed_size(buffer.getvalue())
    (6, (2, 4))
    """
    if not data.startswith(b"\xff\xd8"):
        return 1
    position, end = 2, len(data)
    while position + 4 <= end:
        if data[position] != 0xFF:
            return 1
        marker = data[position + 1]
        if marker == 0xFF:
            position += 1
            continue
        if marker in _JPEG_NO_LENGTH:
            position += 2
            continue
        if marker == 0xDA or marker in _JPEG_SOF:  # EXIF comes before the frame
            return 1
        length = data[position + 2] << 8 | data[position + 3]
        if marker == 0xE1 and data[position + 4 : position + 10] == b"Exif\x00\x00":
            return _tiff_orientation(data[position + 10 : position + 2 + length])
        position += 2 + length
    return 1


def _tiff_orientation(tiff: bytes) -> int:
    """Tag 0x0112 of a TIFF block's first IFD (1 when missing or damaged)."""
    order = {b"II": "<", b"MM": ">"}.get(tiff[:2])
    if order is None or len(tiff) < 8:
        return 1
    try:
        (first,) = struct.unpack_from(order + "I", tiff, 4)
        (count,) = struct.unpack_from(order + "H", tiff, first)
        for entry in range(count):
            tag, kind, _, value = struct.unpack_from(order + "HHIH", tiff, first + 2 + 12 * entry)
            if tag == 0x0112 and kind == 3:  # SHORT
                return value if 1 <= value <= 8 else 1
    except struct.error:
        return 1
    return 1


def displayed_size(data: bytes) -> tuple[int, int]:
    """(width, height) of an image as viewers show it: a JPEG's EXIF orientation 5 to 8 swaps the header's two.

    COCO's and YOLO's sizes and boxes, browsers and ``ImageOps.exif_transpose`` all take that shown
    image; the stored bytes are kept as they are.
    """
    _, width, height = image_header(data)
    return (height, width) if jpeg_orientation(data) in _TURNED else (width, height)


def file_displayed_size(path: str | Path) -> tuple[int, int]:
    """:func:`displayed_size` of an image file, reading only its first bytes when they hold the header.

    Raises
    ------
    EncodingError
        The file is no image or its header is damaged.
    """
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
        if head.startswith(_PNG) and len(head) >= 24:
            width, height = struct.unpack_from(">II", head, 16)
            return width, height
        if head.startswith(b"\xff\xd8\xff"):
            found = _jpeg_frame_size(head)
            if found is not None:
                width, height = found
                return (height, width) if jpeg_orientation(head) in _TURNED else (width, height)
        data = head + handle.read()
    return displayed_size(data)


def _jpeg_frame_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header within ``head`` (None when it is further on)."""
    position, end = 2, len(head)
    while position + 9 <= end:
        if head[position] != 0xFF:
            return None
        marker = head[position + 1]
        if marker in _JPEG_SOF:
            return head[position + 7] << 8 | head[position + 8], head[position + 5] << 8 | head[position + 6]
        if marker == 0xFF:
            position += 1
        elif marker in _JPEG_NO_LENGTH:
            position += 2
        elif marker == 0xDA:
            return None
        else:
            position += 2 + (head[position + 2] << 8 | head[position + 3])
    return None
