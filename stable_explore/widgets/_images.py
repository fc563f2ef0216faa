"""Making the browser's images: page thumbnails, and what a stored image is, from its header only.

Thumbnails are made on several threads for large sources; an image is described by its width,
height, format and bytes.

Examples
--------
>>> import io
>>> from PIL import Image
>>> buffer = io.BytesIO()
>>> Image.new("RGB", (40, 30)).save(buffer, format="PNG")
>>> image_text(buffer.getvalue()).split(",")[0]
'40 x 30 PNG'
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from stable_explore.display.images import array_thumbnail, encode_thumbnail, thumbnail_bytes
from stable_explore.schema import Array3D

if TYPE_CHECKING:
    from stable_explore.widgets._messages import ImageInfo

__all__ = ["image_info", "image_text", "make_thumbnails", "pool"]

_BIG_SOURCE_BYTES = 16 * 1024
_pools: dict[str, ThreadPoolExecutor] = {}


def pool(kind: str) -> ThreadPoolExecutor:
    """One kernel-wide pool per kind, made on first use.

    ``decode``: PIL releases the GIL while it decodes, so large JPEGs decode in parallel.
    ``prefetch``: one thread that makes the next page's thumbnails; separate from the decoders so
    a prefetch waiting on decodes can never hold the threads those decodes need.
    """
    if kind not in _pools:
        workers = min(4, os.cpu_count() or 1) if kind == "decode" else 1
        _pools[kind] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"stable-explore-{kind}")
    return _pools[kind]


def _one_thumbnail(value: bytes | None, feature: object, size: int) -> tuple[bytes, str] | None:
    if value is None:
        return None
    try:
        if isinstance(feature, Array3D):
            return encode_thumbnail(array_thumbnail(feature.decode_value(value), size))
        return thumbnail_bytes(value, size)
    except Exception:  # noqa: BLE001 - a broken image shows as an empty cell, not a dead page
        return None


def image_info(value: bytes, feature: object) -> ImageInfo:
    """Width, height and format of a stored image (from its header only), and its size in bytes."""
    if isinstance(feature, Array3D):
        shape = tuple(feature.shape)
        return {"width": shape[1], "height": shape[0], "format": f"array {feature.dtype}", "bytes": len(value)}
    try:
        from PIL import Image as PILImage

        with PILImage.open(io.BytesIO(value)) as image:
            width, height = image.size
            kind = image.format or "image"
    except Exception:  # noqa: BLE001 - unreadable bytes still say how many they are
        return {"format": "unreadable", "bytes": len(value)}
    return {"width": width, "height": height, "format": kind, "bytes": len(value)}


def image_text(value: bytes | None) -> str:
    """``"32 x 32 PNG, 1,234 bytes"`` for a stored image."""
    if value is None:
        return "None"
    info = image_info(value, None)
    if "width" not in info:
        return f"{info['format']}, {info['bytes']:,} bytes"
    return f"{info['width']} x {info['height']} {info['format']}, {info['bytes']:,} bytes"


def make_thumbnails(values: list[bytes | None], feature: object, size: int) -> list[tuple[bytes, str] | None]:
    """Thumbnails of stored values; large sources are decoded on several threads."""
    sizes = [len(v) for v in values if v is not None]
    if len(values) >= 8 and sizes and sum(sizes) / len(sizes) >= _BIG_SOURCE_BYTES and (os.cpu_count() or 1) > 1:
        return list(pool("decode").map(_one_thumbnail, values, [feature] * len(values), [size] * len(values)))
    return [_one_thumbnail(v, feature, size) for v in values]
