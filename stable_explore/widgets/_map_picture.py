r"""The embedding map's static picture: its points as a small PNG, coloured by label, for the saved notebook.

A notebook reopened on a new kernel has no model for the map (see :mod:`stable_explore.widgets._snapshot`);
this picture is what it shows instead. Each point is a 2x2 pixel dot, later rows over earlier ones.

Examples
--------
>>> import numpy as np
>>> png = map_png(np.array([[0, 0], [1, 1]], dtype=np.float32), np.array([0, 1]))
>>> png[:8] == b"\x89PNG\r\n\x1a\n"
True
"""

from __future__ import annotations

import io

import numpy as np

__all__ = ["LABEL_COLOURS", "map_png"]

LABEL_COLOURS = np.array(
    [
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [127, 127, 127],
        [188, 189, 34],
        [23, 190, 207],
    ],
    dtype=np.uint8,
)
"""Ten distinct colours, one a class (repeated past ten); a point without a label is grey."""
_NO_LABEL = np.array([160, 160, 160], dtype=np.uint8)


def map_png(points: np.ndarray, labels: np.ndarray, *, width: int = 480, height: int = 320) -> bytes:
    """``points`` (rows x 2) drawn in a ``width`` x ``height`` PNG, each coloured by its label code (-1: none)."""
    from PIL import Image as PILImage

    pixels = np.full((height, width, 3), 255, dtype=np.uint8)
    xy = np.asarray(points, dtype=np.float64)
    finite = np.isfinite(xy).all(axis=1)
    if finite.any():
        xy, codes = xy[finite], np.asarray(labels)[finite]
        low, high = xy.min(axis=0), xy.max(axis=0)
        span = np.where(high > low, high - low, 1.0)
        margin = 6
        x = (margin + (xy[:, 0] - low[0]) / span[0] * (width - 2 * margin - 2)).astype(np.int64)
        y = (height - margin - 2 - (xy[:, 1] - low[1]) / span[1] * (height - 2 * margin - 2)).astype(np.int64)
        colours = np.where((codes >= 0)[:, None], LABEL_COLOURS[np.maximum(codes, 0) % len(LABEL_COLOURS)], _NO_LABEL)
        for dy in (0, 1):
            for dx in (0, 1):
                pixels[y + dy, x + dx] = colours
    out = io.BytesIO()
    PILImage.fromarray(pixels).save(out, format="PNG", optimize=True)
    return out.getvalue()
