"""Image statistics a cleaner sorts by: size, aspect, brightness, contrast, blur, channels and file size.

Brightness and contrast are the mean and standard deviation of the grey image, in 0..1. Blur is the
variance of the grey image's Laplacian on the 0..255 scale (OpenCV's convention): sharp photographs
score in the hundreds or more, blurred or flat images near 0. Every figure is taken from the image as
stored, at its full size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stable_explore.schema.image_codec import decode_image_bytes

COLUMNS = ("width", "height", "aspect", "brightness", "contrast", "blur", "channels", "file_size")


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
            grey = np.asarray(image.convert("L"), dtype=np.float32)
        out["brightness"][i] = grey.mean() / 255
        out["contrast"][i] = grey.std() / 255
        out["blur"][i] = laplacian_variance(grey)
    return out
