"""Thumbnails from stored image bytes (or image-shaped arrays), made cheaply.

JPEGs are decoded at reduced scale with PIL's draft mode (the decoder skips
most of the work), so a 64 px thumbnail of a 512 px JPEG costs a fraction of
a full decode; other formats are shrunk with ``reduce`` (a box filter by a
whole factor) before resampling. Memory stays bounded: an image whose decode
(after draft) would exceed ``THUMBNAIL_DECODE_MAX_PIXELS`` is not decoded but
refused with :class:`~stable_explore.errors.ImageTooLargeError`, and PIL's
decompression-bomb guard stays on.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import ImageTooLargeError

if TYPE_CHECKING:
    from PIL import Image as PILImage


THUMBNAIL_DECODE_MAX_PIXELS = 24_000_000  # about 72 MB of RGB: the most a thumbnail may decode
_PASS_THROUGH = {"JPEG": "image/jpeg", "PNG": "image/png"}  # by PIL's format name, after it read the header
_WEB_MODES = ("RGB", "L", "RGBA", "LA", "P")
# Grayscale deeper than 8 bits (depth maps, microscopy): PIL cannot reduce or convert these without clipping,
# so they are stretched to 0..255 like arrays are.
_DEEP_GRAY_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")
_ORIENTATION = 0x0112


def thumbnail_bytes(data: bytes | memoryview, size: int) -> tuple[bytes, str]:
    """Encoded thumbnail bytes and MIME type for a page.

    An image already no larger than ``size`` in a format and mode every
    browser shows (JPEG, PNG) is sent as stored: nothing to decode or encode.
    """
    image = _open_header(data)  # reads the header only
    orientation = image.getexif().get(_ORIENTATION, 1) if image.format == "JPEG" else 1
    if image.format in _PASS_THROUGH and image.mode in _WEB_MODES and max(image.size) <= size and orientation == 1:
        return bytes(data), _PASS_THROUGH[image.format]
    return encode_thumbnail(_shrink(image, size, orientation))


def open_thumbnail(data: bytes | memoryview, size: int) -> PILImage.Image:
    """A PIL image no larger than ``size`` x ``size``, in RGB or L (or RGBA if it has alpha).

    Raises
    ------
    ImageTooLargeError
        A decompression bomb, or an image too large to decode within the thumbnail's memory budget.
    """
    image = _open_header(data)
    orientation = image.getexif().get(_ORIENTATION, 1) if image.format == "JPEG" else 1
    return _shrink(image, size, orientation)


def _shrink(image: PILImage.Image, size: int, orientation: int = 1) -> PILImage.Image:
    from PIL import Image as PILImage
    from PIL import ImageOps

    if image.format == "JPEG":
        image.draft("RGB" if image.mode not in ("L",) else "L", (size, size))
    try:
        _check_budget(image)  # after draft: what the decoder will produce
    except ImageTooLargeError:
        image.close()
        raise
    if image.mode in _DEEP_GRAY_MODES:
        return array_thumbnail(np.asarray(image), size)
    image.thumbnail((size, size), PILImage.Resampling.BILINEAR, reducing_gap=2.0)
    if orientation != 1:
        image = ImageOps.exif_transpose(image) or image  # as browsers show photos taken sideways
    if image.mode not in ("RGB", "L", "RGBA"):
        image = image.convert("RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB")
    return _enlarge_tiny(image, size)


def _check_budget(image: PILImage.Image) -> None:
    width, height = image.size
    if width * height > THUMBNAIL_DECODE_MAX_PIXELS:
        msg = (
            f"a thumbnail of this {image.format or 'image'} would decode {width}x{height} pixels, over the "
            f"budget of {THUMBNAIL_DECODE_MAX_PIXELS:,}; not decoded (open it with ds.with_format('python') "
            "and PIL directly if you trust it)"
        )
        raise ImageTooLargeError(msg)


def pil_thumbnail(image: PILImage.Image, size: int) -> PILImage.Image:
    """A thumbnail of a PIL image a user holds, within the decode budget; the image itself is left as it was.

    An image not decoded yet (``ds[i]`` and ``to_pandas(images="pil")`` give them so) is made from its
    encoded bytes like a stored image's thumbnail (a JPEG drafted at reduced scale, anything over
    :data:`THUMBNAIL_DECODE_MAX_PIXELS` refused) and is never decoded at full size; a decoded one is
    shrunk from its pixels without a full-size copy.

    Raises
    ------
    ImageTooLargeError
        The image is not decoded yet and its thumbnail would decode more than the budget.

    Examples
    --------
    >>> from PIL import Image
    >>> pil_thumbnail(Image.new("RGB", (400, 200)), 64).size
    (64, 32)
    """
    from PIL import Image as PILImage

    if getattr(image, "tile", None) and image.tell() == 0:  # opened lazily: no pixel decoded yet
        source = _encoded_source(image)
        if source is not None:
            return open_thumbnail(source, size)
        _check_budget(image)
    width, height = image.size
    scale = min(1.0, size / max(width, height, 1))
    box = (max(1, round(width * scale)), max(1, round(height * scale)))
    small = image.resize(box, PILImage.Resampling.BILINEAR, reducing_gap=2.0) if box != image.size else image.copy()
    if small.mode not in ("RGB", "L", "RGBA"):
        small = small.convert("RGBA" if "A" in small.getbands() or "transparency" in small.info else "RGB")
    return small


def _encoded_source(image: PILImage.Image) -> bytes | None:
    """The encoded bytes a lazily opened image reads its pixels from (its buffer or its file), if known."""
    source = getattr(image, "fp", None)
    if isinstance(source, io.BytesIO):
        return source.getvalue()
    filename = getattr(image, "filename", "")
    if filename:
        try:
            with open(filename, "rb") as file:
                return file.read()
        except OSError:
            return None
    return None


def _open_header(data: bytes | memoryview) -> PILImage.Image:
    """Open image bytes lazily (header only), turning PIL's bomb error into ours."""
    from PIL import Image as PILImage

    try:
        return PILImage.open(io.BytesIO(data))
    except PILImage.DecompressionBombError as exc:
        msg = f"the stored image is a decompression bomb; PIL refuses to open it: {exc}"
        raise ImageTooLargeError(msg) from exc


def _enlarge_tiny(image: PILImage.Image, size: int) -> PILImage.Image:
    """Scale a tiny image (an 8x8 digit) up by a whole factor, keeping its pixels sharp."""
    from PIL import Image as PILImage

    factor = size // max(1, max(image.size))
    if factor < 2:
        return image
    return image.resize((image.size[0] * factor, image.size[1] * factor), PILImage.Resampling.NEAREST)


def array_thumbnail(array: np.ndarray, size: int) -> PILImage.Image:
    """A thumbnail of an (H, W), (H, W, 1) or (H, W, 3) array, scaled to 0..255 if it is not uint8."""
    from PIL import Image as PILImage

    values = np.asarray(array)
    if values.ndim == 3 and values.shape[2] == 1:
        values = values[:, :, 0]
    if values.dtype != np.uint8:
        values = values.astype(np.float64)
        finite = values[np.isfinite(values)]  # an all-NaN map (fully masked) is a blank thumbnail, quietly
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        scale = 255.0 / (high - low) if high > low else 0.0
        stretched = np.nan_to_num((values - low) * scale, nan=0.0, posinf=255.0, neginf=0.0)
        values = np.clip(stretched, 0.0, 255.0).astype(np.uint8)
    image = PILImage.fromarray(values)
    image.thumbnail((size, size), PILImage.Resampling.BILINEAR)
    return _enlarge_tiny(image, size)


def encode_thumbnail(image: PILImage.Image, *, quality: int = 80) -> tuple[bytes, str]:
    """Encode a thumbnail for the page: JPEG, or PNG when it has alpha. Returns (bytes, MIME type)."""
    buffer = io.BytesIO()
    if image.mode == "RGBA":
        image.save(buffer, format="PNG")
        return buffer.getvalue(), "image/png"
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue(), "image/jpeg"


def data_uri(data: bytes, mime: str) -> str:
    """An inline ``data:`` URI for an <img> tag."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def is_image_array_shape(shape: Any) -> bool:
    """Whether an Array3D shape can be shown as an image: (H, W, 1) or (H, W, 3)."""
    return len(shape) == 3 and shape[2] in (1, 3)
