"""Image bytes in and out: PNG/JPEG encoding of arrays and PIL images (on threads for big batches), decoding."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import EncodingError, ImageTooLargeError
from stable_explore.schema.image_formats import sniff
from stable_explore.schema.image_header import default_max_pixels, too_large_message

if TYPE_CHECKING:
    from PIL import Image as PILImage

__all__ = [
    "decode_image_bytes",
    "encode_array_as_png",
    "encode_in_threads",
    "encode_pil",
    "image_array",
    "is_pil_image",
    "rgb_pixels",
]

_MAX_ENCODE_THREADS = 8
_THREADED_MIN_IMAGES = 16  # below this a batch of images is encoded in the calling thread
_ENCODE_CHUNK = 16  # images per task
_THREADED_MIN_PIXEL_BYTES = 4096  # mean bytes of pixels per image (e.g. 37x37 RGB) for threads to pay off


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under taskset), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on macOS or Windows
        return os.cpu_count() or 1


def is_pil_image(value: Any) -> bool:
    """Whether ``value`` is a PIL image (without importing PIL for values that cannot be one)."""
    module = type(value).__module__
    if not module.startswith("PIL."):
        return False
    from PIL import Image as PILImage

    return isinstance(value, PILImage.Image)


def decode_image_bytes(data: bytes | memoryview, max_pixels: int | None = None) -> PILImage.Image:
    """Open stored image bytes as a PIL image (lazily), refusing a decompression bomb.

    Raises
    ------
    ImageTooLargeError
        The image declares more pixels than ``max_pixels`` (default: PIL's bomb limit), or
        more than PIL itself opens.
    """
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    # PIL tries its formats one by one until one opens the bytes (a WebP frame was tried as JPEG, PNG,
    # GIF... first); the first bytes say which it is, so only that one is asked, and every format
    # only if it refuses them (a BMP's two-byte signature can begin something else).
    kind = sniff(data)
    formats = [kind.name] if kind is not None else None
    try:
        try:
            image = PILImage.open(io.BytesIO(data), formats=formats)
        except UnidentifiedImageError:
            if formats is None:
                raise
            image = PILImage.open(io.BytesIO(data))
    except PILImage.DecompressionBombError as exc:
        msg = f"the stored image is a decompression bomb; PIL refuses to open it: {exc}"
        raise ImageTooLargeError(msg) from exc
    limit = default_max_pixels() if max_pixels is None else max_pixels
    width, height = image.size
    if limit and width * height > limit:
        image.close()
        raise ImageTooLargeError(too_large_message(image.format or "image", width, height, limit))
    return image


# the modes PIL writes as PNG; any other is written as TIFF
# ("I", 32-bit grey, is not among them: a PNG holds 16 bits, and Pillow 13 refuses to write it)
_PNG_MODES = frozenset({"1", "L", "LA", "I;16", "I;16B", "P", "RGB", "RGBA"})

_STRIP_BYTES = 8 * 1024 * 1024  # pixels copied into an array per step
_MAX_PIXEL_BYTES = 4  # the most bytes a pixel of any PIL mode takes in an array (RGBA, CMYK, I, F)


def image_array(image: PILImage.Image) -> np.ndarray:
    """A PIL image's pixels as the array ``np.asarray(image)`` gives, copied a strip of rows at a time.

    ``np.asarray`` first serialises the whole decoded image into bytes, joined from pieces (two
    more copies of it at once), and wraps those: an 81-megapixel RGB image peaked at 785 MB for a
    243 MB array. Strips of :data:`_STRIP_BYTES` keep the peak at the decoded image and the array.

    Examples
    --------
    >>> from PIL import Image
    >>> image_array(Image.new("RGB", (3, 2), (1, 2, 3))).shape
    (2, 3, 3)
    """
    image.load()
    width, height = image.size
    if width * height * _MAX_PIXEL_BYTES <= _STRIP_BYTES:  # one strip at most: no row cropped to measure it
        return np.asarray(image)
    first = np.asarray(image.crop((0, 0, width, 1)))
    rows = max(1, _STRIP_BYTES // max(1, first.nbytes))
    if rows >= height:
        return np.asarray(image)
    array = np.empty((height, *first.shape[1:]), dtype=first.dtype)
    for top in range(0, height, rows):
        bottom = min(height, top + rows)
        array[top:bottom] = np.asarray(image.crop((0, top, width, bottom)))
    return array


def rgb_pixels(data: bytes | memoryview, max_pixels: int | None = None) -> np.ndarray:
    """Stored image bytes as H x W x 3 ``uint8`` pixels: grey repeated, alpha dropped, a palette looked up.

    The array may be read-only (it wraps the decoded bytes): copy it, or copy from it into a
    bigger array (a video window's frames), as callers do anyway.

    Raises
    ------
    ImageTooLargeError
        As :func:`decode_image_bytes`.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> buffer = io.BytesIO()
    >>> Image.new("L", (3, 2), 7).save(buffer, format="PNG")
    >>> pixels = rgb_pixels(buffer.getvalue())
    >>> pixels.shape, pixels.dtype, int(pixels[1, 2, 0])
    ((2, 3, 3), dtype('uint8'), 7)
    """
    with decode_image_bytes(data, max_pixels) as image:
        if image.mode != "RGB":
            image.load()
            converted = image.convert("RGB")  # L, LA, RGBA, P, CMYK, I;16... to 8-bit RGB
            return image_array(converted)
        return image_array(image)


def encode_pil(image: PILImage.Image) -> bytes:
    """A PIL image's bytes in its own format (a JPEG keeps its quantisation), or PNG when it has none.

    A mode PNG cannot hold (CMYK, YCbCr, LAB, F, I) is stored as TIFF, also lossless.
    """
    fmt = image.format
    buffer = io.BytesIO()
    try:
        if fmt == "JPEG":
            # "keep" reuses the source's quantisation tables: no second generation loss.
            image.save(buffer, format="JPEG", quality="keep", subsampling="keep")
        elif fmt in ("PNG", "WEBP", "GIF", "TIFF"):
            image.save(buffer, format=fmt)
        elif image.mode in _PNG_MODES:
            image.save(buffer, format="PNG")
        else:
            image.save(buffer, format="TIFF")
    except (OSError, ValueError, KeyError) as exc:
        msg = (
            f"cannot encode PIL image (mode {image.mode}, size {image.size}, format {fmt}): {exc}; "
            f"convert it first, for example image.convert('RGB')"
        )
        raise EncodingError(msg) from exc
    return buffer.getvalue()


def encode_array_as_png(array: np.ndarray) -> bytes:
    """An (H, W) or (H, W, 1|3|4) uint8 array as PNG bytes; other shapes raise :class:`EncodingError`."""
    from PIL import Image as PILImage

    ok_shape = array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3, 4))
    if not ok_shape or array.dtype not in (np.uint8, np.bool_, np.uint16):
        msg = (
            "expected a uint8 array of shape (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), "
            f"got {array.dtype} {array.shape}"
        )
        raise EncodingError(msg)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    buffer = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(array)).save(buffer, format="PNG")
    return buffer.getvalue()


EncodePart = Callable[[list[Any], int], list[Any]]
"""Encodes a run of values one by one; its second argument is the row of the first, for error messages."""


def encode_in_threads(values: list[Any], start: int, encode_part: EncodePart) -> list[Any]:
    """Encode ``values`` with ``encode_part``, shared out among threads when the batch is worth it.

    The result is the same bytes as one thread gives, and an error names the first bad row in order.
    Small images (8x8 digits) encode faster than threads can be handed them, so only batches of at
    least ``_THREADED_MIN_IMAGES`` arrays or PIL images with enough pixels go to threads.
    """
    workers = min(usable_cpus(), _MAX_ENCODE_THREADS)
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    pil_images = [v for v in values if is_pil_image(v)]
    count = len(arrays) + len(pil_images)
    pixel_bytes = sum(a.nbytes for a in arrays) + sum(i.width * i.height * len(i.getbands()) for i in pil_images)
    shared = len(set(map(id, pil_images))) < len(pil_images)  # one PIL image must not be saved by two threads
    if workers < 2 or count < _THREADED_MIN_IMAGES or pixel_bytes < count * _THREADED_MIN_PIXEL_BYTES or shared:
        return encode_part(values, start)
    for image in pil_images:
        with contextlib.suppress(Exception):
            image.load()  # lazily opened files are read here, once; a failure is reported by encode_value
    size = min(_ENCODE_CHUNK, -(-len(values) // workers))  # small chunks: Ctrl-C waits for one at most
    with ThreadPoolExecutor(workers, thread_name_prefix="stable-explore-encode") as pool:
        parts = [pool.submit(encode_part, values[i : i + size], start + i) for i in range(0, len(values), size)]
        try:
            return [item for part in parts for item in part.result()]  # the first bad row, in order, raises
        except BaseException:
            for part in parts:
                part.cancel()
            raise
