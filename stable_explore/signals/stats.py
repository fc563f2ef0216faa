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


def stats_batch(values: list[Any], first: int) -> dict[str, np.ndarray]:
    """The statistics of each encoded image (NaN and 0 for a row with no image)."""
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
    for i, data in enumerate(values):
        if data is None:
            continue
        out["file_size"][i] = len(data)
        with decode_image_bytes(data) as image:
            width, height = image.size
            out["width"][i], out["height"][i] = width, height
            out["aspect"][i] = width / height if height else np.nan
            out["channels"][i] = len(image.getbands())
            grey = np.asarray(grey_within(image), dtype=np.float32)
        out["brightness"][i] = grey.mean() / 255
        out["contrast"][i] = grey.std() / 255
        out["blur"][i] = laplacian_variance(grey)
    return out
