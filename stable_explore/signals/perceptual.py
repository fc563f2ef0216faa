"""Perceptual hashes of images: 64-bit fingerprints that stay close when an image is resized, re-encoded or cropped.

``dhash`` compares each pixel of a 9x8 grey thumbnail with its right neighbour (the gradient's sign);
``phash`` keeps the signs of the lowest 8x8 frequencies of a 32x32 grey thumbnail's DCT against their
median. Two images are near duplicates when their hashes differ in few bits (the Hamming distance).

Examples
--------
>>> import numpy as np
>>> from PIL import Image as PILImage
>>> ramp = PILImage.fromarray(np.tile(np.arange(0, 256, 4, dtype=np.uint8), (64, 1)))
>>> hamming(dhash(ramp), dhash(ramp.resize((48, 48))))
0
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import InvalidOptionError
from stable_explore.schema.image_codec import decode_image_bytes

if TYPE_CHECKING:
    from types import ModuleType

    from PIL.Image import Image as PILImage

METHODS = ("dhash", "phash")
REVISIONS = {"dhash": 3, "phash": 3}
"""Each hash's revision, part of a kept signal's key: 2 decodes a JPEG at a reduced scale (see DRAFT_MARGIN);
3 resizes a reduced decode over what it spans (:data:`Extent`: a JPEG whose sides are not a multiple of
the scale was 2-4 bits off its full decode's hash, now under half a bit), and dHash resizes a JPEG
decoded within STACK_SIDE over its stack, not by Pillow."""


DRAFT_MARGIN = 2
"""How many times the thumbnail's size a JPEG is decoded at, at least (draft mode; then a Lanczos resize)."""
SIZES = {"dhash": (9, 8), "phash": (32, 32)}
"""The grey thumbnail (width, height) each hash is taken of."""


Extent = tuple[float, float]
"""The (height, width) a decoded image spans in its own pixels: less than its shape by a fraction where a
JPEG decoded at 1/2 to 1/8 scale has a side that is not a multiple of the scale (its last pixel is part
of a block: 225 rows at 1/2 are 113 pixels spanning 112.5)."""


def _decoded(image: PILImage, size: tuple[int, int], *, resized: bool = False) -> np.ndarray:
    """``image`` in grey as uint8, decoded at a reduced scale where the format allows, within 4x ``size``.

    The pixels of :func:`_pillow_grey` (which also gives what they span).
    """
    return _pillow_grey(image, size, resized=resized)[0]


def _pillow_grey(image: PILImage, size: tuple[int, int], *, resized: bool = False) -> tuple[np.ndarray, Extent]:
    """``image`` in grey as uint8 (see :func:`_decoded`) and the :data:`Extent` it spans.

    A JPEG is decoded at 1/2, 1/4 or 1/8 scale by libjpeg itself (draft mode), the smallest still at
    least :data:`DRAFT_MARGIN` times ``size``: the hash stays within half a bit of a full decode's,
    where a decode at ``size`` itself moved a 300-pixel image's pHash by 6 bits. What is still larger
    than 4x ``size`` (a huge JPEG, or any other format, which decodes whole), or every image when
    ``resized``, is resized to ``size`` here (Pillow's Lanczos over the extent draft mode gives).
    """
    from PIL import Image as PILImageModule

    drafted = image.draft("L", (size[0] * DRAFT_MARGIN, size[1] * DRAFT_MARGIN))
    grey = image.convert("L")
    box = drafted[1] if drafted is not None else (0, 0, grey.size[0], grey.size[1])
    extent = (float(box[3]), float(box[2]))
    if grey.size != size and (resized or grey.size[0] > 4 * size[0] or grey.size[1] > 4 * size[1]):
        grey = grey.resize(size, PILImageModule.Resampling.LANCZOS, box=box)
        extent = (float(size[1]), float(size[0]))
    pixels: np.ndarray = np.asarray(grey, dtype=np.uint8)
    return pixels, extent


STACK_SIDE = 128
"""A JPEG decoded by libjpeg-turbo within this many pixels a side (or 4x the thumbnail's, if more) is
resized to the thumbnail over the stack of its size (matrix products); a larger one, one at a time by Pillow."""


def _stacked(width: int, height: int, size: tuple[int, int]) -> bool:
    """Whether a decoded ``width`` x ``height`` grey image is resized to ``size`` over its stack (see STACK_SIDE)."""
    return width <= max(4 * size[0], STACK_SIDE) and height <= max(4 * size[1], STACK_SIDE)


def _fast_decoded(
    data: Any, size: tuple[int, int], decoder: ModuleType, *, resized: bool
) -> tuple[np.ndarray, Extent] | None:
    """As :func:`_pillow_grey`, by libjpeg-turbo (``simplejpeg``) straight to grey; None for what it does not take."""
    from stable_explore.signals._jpeg import draft_scale, grey_jpeg, jpeg_header

    encoded = data if isinstance(data, bytes) else bytes(data)
    header = jpeg_header(decoder, encoded)
    if header is None:
        return None
    minimum = (size[0] * DRAFT_MARGIN, size[1] * DRAFT_MARGIN)
    grey = grey_jpeg(encoded, minimum[0], minimum[1], decoder=decoder, header=header)
    if grey is None:
        return None
    factor = draft_scale(header[0], header[1], minimum[0], minimum[1])
    extent = (header[1] / factor, header[0] / factor)
    height, width = grey.shape
    # what is within STACK_SIDE (a dHash thumbnail, ``resized``, too) is resized over its stack (see hash_batch)
    if (width, height) != size and not _stacked(width, height, size):
        from PIL import Image as PILImageModule

        box = (0.0, 0.0, extent[1], extent[0])
        small = PILImageModule.fromarray(grey).resize(size, PILImageModule.Resampling.LANCZOS, box=box)
        grey, extent = np.asarray(small, dtype=np.uint8), (float(size[1]), float(size[0]))
    return grey, extent


def _lanczos(x: np.ndarray) -> np.ndarray:
    weights: np.ndarray = np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)
    return weights


@lru_cache(maxsize=256)
def resize_matrix(source: int, target: int, extent: float | None = None) -> np.ndarray:
    """The (target, source) matrix of a Lanczos-3 resize of one axis, the weights Pillow's ``LANCZOS`` uses.

    A resize of an image is ``rows @ pixels @ columns.T``; no pixel is rounded between the two axes.
    ``extent``: what the ``source`` pixels span (see :data:`Extent`; default ``source``), as Pillow's
    ``resize(box=...)`` takes it.

    Examples
    --------
    >>> resize_matrix(4, 4).tolist() == np.eye(4).tolist()
    True
    >>> np.allclose(resize_matrix(64, 32).sum(axis=1), 1)
    True
    """
    span = float(source) if extent is None else extent
    if source == target and span == source:
        return np.eye(target)
    scale = span / target
    stretch = max(scale, 1.0)  # a reduction widens the filter, so every source pixel counts
    support = 3.0 * stretch
    matrix = np.zeros((target, source))
    for i in range(target):
        center = (i + 0.5) * scale
        low, high = max(0, int(center - support + 0.5)), min(source, int(center + support + 0.5))
        weights = _lanczos((np.arange(low, high) - center + 0.5) / stretch)
        matrix[i, low:high] = weights / weights.sum()
    return matrix


StackKey = tuple[int, int, float, float]
"""(height, width) of a stack's images, then the :data:`Extent` they span."""


class _Stack:
    """Grey images of one shape and extent, decoded into one buffer that grows by doubling (no copy per image)."""

    def __init__(self, height: int, width: int) -> None:
        self.buffer = np.empty((1, height, width), dtype=np.uint8)
        self.rows: list[int] = []

    def slot(self) -> np.ndarray:
        """The (height, width) buffer the next image is decoded into (:meth:`rows` then takes its row)."""
        if len(self.rows) == len(self.buffer):
            grown = np.empty((2 * len(self.buffer), *self.buffer.shape[1:]), dtype=np.uint8)
            grown[: len(self.rows)] = self.buffer
            self.buffer = grown
        free: np.ndarray = self.buffer[len(self.rows)]
        return free

    def taken(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, pixels (rows, height, width)) of the images held."""
        return np.array(self.rows, dtype=np.int64), self.buffer[: len(self.rows)]


def thumbnails(
    values: list[Any], size: tuple[int, int], *, resized: bool = False
) -> tuple[dict[StackKey, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """(stacks, valid): each encoded image decoded in grey (:func:`_decoded`), stacked with the others of its shape.

    ``stacks`` maps a (height, width, extent's height, extent's width) to the rows of that shape and
    extent and their pixels, shape (rows, height, width) uint8; ``valid`` is False for a row without an
    image. ``resized``: every image at ``size``. A JPEG libjpeg-turbo decodes within :data:`STACK_SIDE`
    is decoded straight into its stack.

    Examples
    --------
    >>> stacks, valid = thumbnails([None], (9, 8))
    >>> stacks, valid.tolist()
    ({}, [False])
    """
    from stable_explore.signals._jpeg import JpegPlans, draft_scale, fast_decoder

    decoder = fast_decoder()
    valid = np.zeros(len(values), dtype=bool)
    stacks: dict[StackKey, _Stack] = {}
    minimum = (size[0] * DRAFT_MARGIN, size[1] * DRAFT_MARGIN)

    def plan(width: int, height: int, channels: int) -> tuple[_Stack, dict[str, Any]] | None:
        """The stack a JPEG of this size decodes into (within STACK_SIDE at its scale), and the decoder's options."""
        factor = draft_scale(width, height, minimum[0], minimum[1])
        shape = (-(-height // factor), -(-width // factor))
        if not _stacked(shape[1], shape[0], size):
            return None
        key = (shape[0], shape[1], height / factor, width / factor)
        stack = stacks.get(key)
        if stack is None:
            stack = stacks[key] = _Stack(*shape)
        return stack, {"colorspace": "GRAY", "fastdct": True, "min_width": shape[1], "min_height": shape[0]}

    plans = JpegPlans(decoder, plan)
    for i, data in enumerate(values):
        if data is None:
            continue
        valid[i] = True
        planned = plans.of(data)
        if planned is not None:
            # the common case, with no per-image array: libjpeg-turbo decodes into the stack of its shape
            into, options = planned[1]
            try:
                plans.decode(data, buffer=into.slot(), **options)
            except ValueError:
                pass  # not one libjpeg-turbo takes after all: Pillow decodes it
            else:
                into.rows.append(i)
                continue
        decoded = _fast_decoded(data, size, decoder, resized=resized) if decoder is not None else None
        if decoded is None:
            with decode_image_bytes(data) as image:
                decoded = _pillow_grey(image, size, resized=resized)
        pixels, extent = decoded
        key = (pixels.shape[0], pixels.shape[1], *extent)
        stack = stacks.get(key)
        if stack is None:
            stack = stacks[key] = _Stack(pixels.shape[0], pixels.shape[1])
        stack.slot()[...] = pixels
        stack.rows.append(i)
    return {key: stack.taken() for key, stack in stacks.items() if stack.rows}, valid


_STACK_PIXELS = 1 << 17
"""Pixels of one decoded size transformed at once, however many images that is: a float64 copy of 1 MB, within a
core's cache (the 8 MB of 1 << 20 pixels took 1.3-1.6x the time per image)."""


def _resized_stack(stack: np.ndarray, size: tuple[int, int], extent: Extent | None = None) -> np.ndarray:
    """Each grey image of a stack resized to ``size`` (Lanczos, :func:`resize_matrix`), rounded to uint8 as Pillow's.

    ``extent``: what the images span (see :data:`Extent`; default their shape).
    """
    span = extent if extent is not None else (float(stack.shape[1]), float(stack.shape[2]))
    rows, columns = resize_matrix(stack.shape[1], size[1], span[0]), resize_matrix(stack.shape[2], size[0], span[1])
    small = np.empty((len(stack), size[1], size[0]), dtype=np.uint8)
    step = max(1, _STACK_PIXELS // max(1, stack.shape[1] * stack.shape[2]))
    for start in range(0, len(stack), step):
        resized = np.matmul(np.matmul(rows, stack[start : start + step].astype(np.float64)), columns.T)
        small[start : start + step] = np.clip(np.rint(resized), 0, 255)
    return small


def _pack_rows(bits: np.ndarray) -> np.ndarray:
    """Each row of 64 bits (first bit most significant) as one uint64."""
    packed = np.packbits(bits.reshape(len(bits), 64).astype(np.uint8), axis=1)
    words: np.ndarray = packed.view(">u8").ravel().astype(np.uint64)
    return words


def _pack(bits: np.ndarray) -> int:
    return int(_pack_rows(bits.reshape(1, 64))[0])


def dhash_stack(stack: np.ndarray) -> np.ndarray:
    """The dHash of each 9x8 grey thumbnail of a stack (n, 8, 9): is each pixel darker than its right neighbour.

    Examples
    --------
    >>> ramp = np.tile(np.arange(9, dtype=np.uint8), (1, 8, 1))
    >>> hex(int(dhash_stack(ramp)[0]))
    '0xffffffffffffffff'
    """
    return _pack_rows(stack[:, :, 1:] > stack[:, :, :-1])


@lru_cache(maxsize=1)
def _dct_matrix() -> np.ndarray:
    n = 32
    k = np.arange(n)[:, None]
    matrix: np.ndarray = np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n)) * np.sqrt(2 / n)
    matrix[0] /= np.sqrt(2)
    return matrix


@lru_cache(maxsize=256)
def _low_dct(source: int, extent: float) -> np.ndarray:
    """The 8 lowest DCT rows of a 32-pixel axis, after a resize of ``source`` pixels (spanning ``extent``) to 32."""
    if source == 32 and extent == 32:
        return _dct_matrix()[:8]
    low: np.ndarray = _dct_matrix()[:8] @ resize_matrix(source, 32, extent)
    return low


def phash_stack(stack: np.ndarray, extent: Extent | None = None) -> np.ndarray:
    """The pHash of each grey image of a stack (n, height, width): its 32x32 thumbnail's 8x8 lowest DCT terms' signs.

    Each term is compared with the median of the 63 terms besides the mean.

    The resize to 32x32 (:func:`resize_matrix`) and the DCT's 8 lowest rows are one matrix per axis, so
    a stack costs two matrix products; the (0, 0) term, the mean, is left out of the median. ``extent``:
    what the images span (see :data:`Extent`; default their shape).

    Examples
    --------
    >>> flat = np.full((1, 32, 32), 128, dtype=np.uint8)
    >>> int(phash_stack(flat)[0]) >> 63  # only the mean term stands above the median
    1
    """
    height, width = stack.shape[1:]
    span = extent if extent is not None else (float(height), float(width))
    rows, columns = _low_dct(height, span[0]), _low_dct(width, span[1])
    out = np.zeros(len(stack), dtype=np.uint64)
    step = max(1, _STACK_PIXELS // max(1, height * width))
    for start in range(0, len(stack), step):
        part = stack[start : start + step].astype(np.float64)
        low = np.matmul(np.matmul(rows, part), columns.T).reshape(len(part), 64)
        # the median of the 63 terms is the 32nd smallest: a partition finds it, ~1.3 us an image under np.median's
        median = np.partition(low[:, 1:], 31, axis=1)[:, 31]
        out[start : start + len(part)] = _pack_rows(low > median[:, None])
    return out


def dhash(image: PILImage) -> int:
    """The 64-bit difference hash of a PIL image: is each pixel of a 9x8 grey thumbnail darker than its right one."""
    return int(dhash_stack(_decoded(image, SIZES["dhash"], resized=True)[None])[0])


def phash(image: PILImage) -> int:
    """The 64-bit DCT hash of a PIL image: the lowest 8x8 frequencies of a 32x32 grey thumbnail above their median."""
    pixels, extent = _pillow_grey(image, SIZES["phash"])
    return int(phash_stack(pixels[None], extent)[0])


_STACKERS = {"dhash": dhash_stack, "phash": phash_stack}


def check_method(method: str) -> str:
    """``method`` if it names a perceptual hash."""
    if method not in _STACKERS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise InvalidOptionError(msg)
    return method


def hash_batch(values: list[Any], first: int, method: str) -> dict[str, np.ndarray]:
    """The perceptual hash of each encoded image (0 with ``valid`` False for a row with no image).

    Each image is decoded only as far as its thumbnail needs; the hashes are then taken over stacks of
    the images of one decoded size (the resize folded into the hash's matrix products).
    """
    # dHash: a 9x8 thumbnail rounded to grey levels as Pillow's (which keeps flat areas' ties), by Pillow for
    # what it decoded, over the stack for a JPEG libjpeg-turbo decoded within STACK_SIDE; pHash: any decoded
    # size, the resize folded into the DCT's matrix products
    stacks, valid = thumbnails(values, SIZES[method], resized=method == "dhash")
    hashes = np.zeros(len(values), dtype=np.uint64)
    for key, (rows, stack) in stacks.items():
        extent = (key[2], key[3])
        if method == "phash":
            hashes[rows] = phash_stack(stack, extent)
            continue
        if (key[0], key[1], *extent) != (SIZES["dhash"][1], SIZES["dhash"][0], *SIZES["dhash"][::-1]):
            stack = _resized_stack(stack, SIZES["dhash"], extent)
        hashes[rows] = dhash_stack(stack)
    return {"hash": hashes, "valid": valid}


def dhash_batch(values: list[Any], first: int) -> dict[str, np.ndarray]:
    """:func:`hash_batch` with dHash (a module-level function, so workers can run it)."""
    return hash_batch(values, first, "dhash")


def phash_batch(values: list[Any], first: int) -> dict[str, np.ndarray]:
    """:func:`hash_batch` with pHash (a module-level function, so workers can run it)."""
    return hash_batch(values, first, "phash")


BATCH_FUNCTIONS = {"dhash": dhash_batch, "phash": phash_batch}


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy's ``bitwise_count`` where it has one)."""
    values = np.asarray(values, dtype=np.uint64)
    if hasattr(np, "bitwise_count"):
        counted: np.ndarray = np.bitwise_count(values).astype(np.int64)
        return counted
    x = values - ((values >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    with np.errstate(over="ignore"):
        summed: np.ndarray = ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)
    return summed


def hamming(a: int, b: int) -> int:
    """Bits in which two 64-bit hashes differ."""
    return bin(int(a) ^ int(b)).count("1")
