"""Image statistics a cleaner sorts by: size, aspect, brightness, contrast, blur, channels and file size.

Brightness and contrast are the mean and standard deviation of the grey image, in 0..1. Blur is the
variance of the grey image's Laplacian on the 0..255 scale (OpenCV's convention): sharp photographs
score in the hundreds or more, blurred or flat images near 0.

Width, height, channels and file size are the stored image's. Brightness, contrast and blur are taken
from the image as stored when it has at most :data:`STATS_MAX_PIXELS` pixels (4 megapixels: a 2000 x
2000 photograph), and from a reduced copy of a larger one, so one huge image costs a few megabytes, not
a gigabyte: a JPEG is decoded at 1/2, 1/4 or 1/8 scale by the decoder itself (draft mode), then any
format is shrunk by a whole factor (``reduce``, the mean of each block of pixels) until it fits.
Brightness barely moves (the mean of block means); contrast and blur lose the detail finer than a
block, so a reduced image reads a little smoother and sharper-edged than it would at full size: compare
blur scores between images of similar sizes. Formats other than JPEG are decoded whole before they are
reduced (PIL has no cheaper way), so their peak is the decoded image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.schema.image_codec import decode_image_bytes

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

COLUMNS = ("width", "height", "aspect", "brightness", "contrast", "blur", "channels", "file_size")
STATS_REVISION = 1
"""The statistics' revision, part of a kept signal's key (bumped when what they measure changes)."""
STATS_MAX_PIXELS = 4_000_000
"""The most pixels a signal decodes of one image (a larger one is reduced first; see the module's note)."""


def grey_within(image: PILImage, max_pixels: int = STATS_MAX_PIXELS) -> PILImage:
    """The image in grey (mode ``L``) with at most ``max_pixels`` pixels, never decoding a JPEG at full size.

    An image that fits is converted as it is. A larger JPEG is decoded at the smallest of 1/2, 1/4 and
    1/8 scale that fits (draft mode: the decoder skips the rest); whatever is still too large (any
    other format, or a JPEG over 64 times the budget) is shrunk by the smallest whole factor that fits
    (``reduce``: each block's mean). ``image`` is the caller's to close.

    Examples
    --------
    >>> from PIL import Image
    >>> grey_within(Image.new("RGB", (3000, 2000), "white"), 1_000_000).size
    (1000, 667)
    """
    width, height = image.size
    if width * height <= max_pixels:
        return image.convert("L")
    if image.format == "JPEG" and image.mode in ("RGB", "L", "YCbCr"):
        factor = 1
        while factor < 8 and -(-width // factor) * -(-height // factor) > max_pixels:
            factor *= 2
        image.draft("L", (max(1, width // factor), max(1, height // factor)))
        width, height = image.size
    factor = 1
    while -(-width // factor) * -(-height // factor) > max_pixels:
        factor += 1
    if factor == 1:
        return image.convert("L")
    try:
        small = image.reduce(factor)  # a whole-factor box filter, before any full-size copy in grey
    except ValueError:  # a mode reduce does not take (palette, 1-bit): grey at full size first
        return image.convert("L").reduce(factor)
    return small.convert("L")


def laplacian_variance(grey: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian of a 2-D grey array (0 for an image under 3x3)."""
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4 * grey[1:-1, 1:-1]
    return float(lap.var())


_PART_PIXELS = 1 << 16
"""Pixels measured at once (several small images, or a band of rows of a large one): each work array
(int16 Laplacian, float64 copies for the sums) then stays within the CPU's cache, where a larger part,
or a whole large image, spends most of its time waiting on memory."""


def _exact_sums(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(sum, sum of squares) of each image of a stack (n, rows, columns) of integers within +-``bound``, exact.

    In int32 per image, or row by row, where the squares' sum cannot overflow it (the rows then added in int64), else in
    float64 (which holds every partial sum exactly); no BLAS call, whose threads cost more than such a
    small product saves.

    Examples
    --------
    >>> [v.tolist() for v in _exact_sums(np.array([[[1, -2, 3]]], dtype=np.int16), 3)]
    [[2.0], [14.0]]
    """
    n, rows, columns = values.shape
    if bound * bound * rows * columns < 1 << 31:
        values = values.reshape(n, 1, rows * columns)  # each image's squares in one int32 sum
    if bound * bound * values.shape[2] < 1 << 31:
        wide = values.astype(np.int32)
        exact = np.int32 if bound * rows * columns < 1 << 31 else np.int64  # int32 sums without a cast
        total = wide.reshape(n, -1).sum(axis=1, dtype=exact)
        squares = np.einsum("ijk,ijk->ij", wide, wide).sum(axis=1, dtype=np.int64)
        return total.astype(np.float64), squares.astype(np.float64)
    floats = values.reshape(n, -1).astype(np.float64)
    return floats.sum(axis=1), np.einsum("ij,ij->i", floats, floats)


def _laplacian(rows: np.ndarray) -> np.ndarray:
    """The 4-neighbour Laplacian of each image (or band of rows) of a uint8 stack (n, h, w): (n, h-2, w-2) int16.

    Taken over the stack as one flat run (a neighbour is one pixel or one row away), whose contiguous
    adds are faster than the same over 2-D slices; the values that wrapped across an edge are then
    left out.

    Examples
    --------
    >>> _laplacian(np.array([[[0, 0, 0], [0, 9, 0], [0, 0, 0]]], dtype=np.uint8)).tolist()
    [[[-36]]]
    """
    count, height, width = rows.shape
    flat = rows.reshape(-1).astype(np.int16)  # a Laplacian lies within +-1020
    size = flat.size
    whole = np.empty(size, dtype=np.int16)
    inner = whole[width : size - width]  # every pixel with a row above and below in the run
    np.add(flat[width - 1 : size - width - 1], flat[width + 1 : size - width + 1], out=inner)
    inner += flat[: size - 2 * width]
    inner += flat[2 * width :]
    inner -= flat[width : size - width] << 2
    lap: np.ndarray = whole.reshape(count, height, width)[:, 1:-1, 1:-1]
    return lap


def _stack_sums(stack: np.ndarray) -> np.ndarray:
    """(4, n): the exact sum and sum of squares of each image's pixels, then of its Laplacian's (0 under 3x3)."""
    n, height, width = stack.shape
    sums = np.zeros((4, n))
    with_laplacian = height >= 3 and width >= 3
    if height * width <= _PART_PIXELS:  # whole images, as many as fit in a part
        step = max(1, _PART_PIXELS // max(1, height * width))
        for start in range(0, n, step):
            part = stack[start : start + step]
            done = slice(start, start + len(part))
            sums[0, done], sums[1, done] = _exact_sums(part, 255)
            if with_laplacian:
                sums[2, done], sums[3, done] = _exact_sums(_laplacian(part), 1020)
        return sums
    band = max(1, _PART_PIXELS // width)  # a large image: bands of rows, each Laplacian row taken once
    for i in range(n):
        image = stack[i]
        for top in range(0, height, band):
            total, squares = _exact_sums(image[None, top : top + band], 255)
            sums[0, i] += total[0]
            sums[1, i] += squares[0]
            # the Laplacian's rows centred in this band (rows 1..height-2), with one row of context each side
            first, last = max(top, 1), min(top + band, height - 1)
            if with_laplacian and first < last:
                total, squares = _exact_sums(_laplacian(image[None, first - 1 : last + 1]), 1020)
                sums[2, i] += total[0]
                sums[3, i] += squares[0]
    return sums


def _moments(total: np.ndarray, squares: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance from exact sums of ``count`` values (no cancellation: the float is taken only at the end)."""
    return total / count, np.maximum(count * squares - total * total, 0) / float(count) ** 2


def grey_stats(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(brightness, contrast, blur) of each uint8 grey image of a stack (n, height, width) of one size.

    Sums are exact (integers held in float64) and taken over parts of at most :data:`_PART_PIXELS`
    pixels (several small images at once, or a large one band by band), so each figure is exact up to
    its last division: brightness and contrast are the mean and standard deviation in 0..1, blur the
    variance of the 4-neighbour Laplacian on the 0..255 scale (0 under 3x3 pixels).

    Examples
    --------
    >>> stack = np.array([[[0, 255], [255, 0]]], dtype=np.uint8)
    >>> [float(v[0]) for v in grey_stats(stack)]
    [0.5, 0.5, 0.0]
    """
    n, height, width = stack.shape
    sums = _stack_sums(stack)
    mean, variance = _moments(sums[0], sums[1], height * width)
    brightness, contrast = mean / 255, np.sqrt(variance) / 255
    blur = np.zeros(n)
    if height >= 3 and width >= 3:
        blur = _moments(sums[2], sums[3], (height - 2) * (width - 2))[1]
    return brightness, contrast, blur


_HELD_PIXELS = 1 << 22
"""Pixels of one size a batch holds before it measures them (:func:`grey_stats` then takes them a part at a time):
4 MB, where the whole batch was held before (a 1,024-row batch of 512 px JPEGs: ~540 MB with its stacked copy).
Measuring sooner cost more: a call per part of 64k pixels ~10% at 128 px, a call per 512 px image ~12-23%, per
megapixel 3-13%, as if decoding and measuring in turn each evicted the other's working set."""


class _Parts:
    """Grey images of one size, decoded into a reused buffer and measured :data:`_HELD_PIXELS` at a time.

    A batch holds at most that many pixels of each size (4 MB, within the CPU's last cache), never every
    decoded image of the batch and a stacked copy of them.
    """

    def __init__(self, height: int, width: int, out: dict[str, np.ndarray]) -> None:
        self.limit = max(1, _HELD_PIXELS // max(1, height * width))  # images measured together
        self.buffer = np.empty((1, height, width), dtype=np.uint8)  # grows by doubling, up to ``limit``
        self.rows: list[int] = []
        self.out = out

    def slot(self) -> np.ndarray:
        """The (height, width) buffer the next image is decoded into (:meth:`add` then keeps it)."""
        if len(self.rows) == len(self.buffer):
            grown = np.empty((min(self.limit, 2 * len(self.buffer)), *self.buffer.shape[1:]), dtype=np.uint8)
            grown[: len(self.rows)] = self.buffer
            self.buffer = grown
        free: np.ndarray = self.buffer[len(self.rows)]
        return free

    def add(self, row: int) -> None:
        """Keep the image just decoded into :meth:`slot` as ``row``'s; a full part is measured at once."""
        self.rows.append(row)
        if len(self.rows) == self.limit:
            self.measure()

    def measure(self) -> None:
        """Brightness, contrast and blur of the images held, written to their rows; the buffer is then free."""
        if not self.rows:
            return
        rows = np.array(self.rows, dtype=np.int64)
        figures = grey_stats(self.buffer[: len(rows)])
        for name, values_of in zip(("brightness", "contrast", "blur"), figures, strict=True):
            self.out[name][rows] = values_of
        self.rows.clear()


def stats_batch(values: list[Any], first: int) -> dict[str, np.ndarray]:
    """The statistics of each encoded image (NaN and 0 for a row with no image).

    Each image is decoded (within :data:`STATS_MAX_PIXELS`) once, a JPEG by libjpeg-turbo where
    ``simplejpeg`` is installed (see :mod:`stable_explore.signals._jpeg`), straight into a buffer of
    the images of its size; brightness, contrast and blur are measured :data:`_HELD_PIXELS` of such
    images at a time (:func:`grey_stats`).
    """
    n = len(values)
    out = {
        "width": np.zeros(n, dtype=np.int32),
        "height": np.zeros(n, dtype=np.int32),
        "aspect": np.full(n, np.nan),
        "brightness": np.full(n, np.nan),
        "contrast": np.full(n, np.nan),
        "blur": np.full(n, np.nan),
        "channels": np.zeros(n, dtype=np.int8),
        "file_size": np.zeros(n, dtype=np.int64),
    }
    from stable_explore.signals._jpeg import JpegPlans, fast_decoder

    decoder = fast_decoder()
    parts: dict[tuple[int, int], _Parts] = {}

    def part_of(height: int, width: int) -> _Parts:
        part = parts.get((height, width))
        if part is None:
            part = parts[height, width] = _Parts(height, width, out)
        return part

    # a JPEG within the budget: libjpeg-turbo straight to grey at full size, into its part's buffer
    plans = JpegPlans(
        decoder, lambda width, height, _: part_of(height, width) if width * height <= STATS_MAX_PIXELS else None
    )
    measured: list[tuple[int, int, int, int, int]] = []  # (row, width, height, channels, bytes), set at the end
    for i, data in enumerate(values):
        if data is None:
            continue
        planned = plans.of(data)
        if planned is not None:
            (width, height, channels), part = planned
            try:
                plans.decode(data, colorspace="GRAY", fastdct=False, buffer=part.slot())
            except ValueError:
                planned = None  # not one libjpeg-turbo takes after all: Pillow decodes it
            else:
                part.add(i)
        if planned is None:
            with decode_image_bytes(data) as image:
                width, height = image.size
                channels = len(image.getbands())
                grey = np.asarray(grey_within(image), dtype=np.uint8)
            part = part_of(*grey.shape)
            part.slot()[...] = grey
            part.add(i)
        measured.append((i, width, height, channels, len(data)))
    for part in parts.values():
        part.measure()
    if measured:
        rows, widths, heights, channels_of, sizes = (np.array(v, dtype=np.int64) for v in zip(*measured, strict=True))
        out["width"][rows], out["height"][rows] = widths, heights
        with np.errstate(divide="ignore", invalid="ignore"):
            out["aspect"][rows] = np.where(heights > 0, widths / np.maximum(heights, 1), np.nan)
        out["channels"][rows], out["file_size"][rows] = channels_of, sizes
    return out
