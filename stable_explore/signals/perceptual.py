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
    from PIL.Image import Image as PILImage

METHODS = ("dhash", "phash")


def _grey(image: PILImage, size: tuple[int, int]) -> np.ndarray:
    from PIL import Image as PILImageModule

    image.draft("L", (size[0] * 4, size[1] * 4))  # JPEG: decode at a fraction of the size (much faster)
    grey = image.convert("L").resize(size, PILImageModule.Resampling.LANCZOS)
    pixels: np.ndarray = np.asarray(grey, dtype=np.float64)
    return pixels


def _pack(bits: np.ndarray) -> int:
    return int.from_bytes(np.packbits(bits.ravel().astype(np.uint8)).tobytes(), "big")


def dhash(image: PILImage) -> int:
    """The 64-bit difference hash of a PIL image: is each pixel of a 9x8 grey thumbnail darker than its right one."""
    pixels = _grey(image, (9, 8))
    return _pack(pixels[:, 1:] > pixels[:, :-1])


@lru_cache(maxsize=1)
def _dct_matrix() -> np.ndarray:
    n = 32
    k = np.arange(n)[:, None]
    matrix: np.ndarray = np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n)) * np.sqrt(2 / n)
    matrix[0] /= np.sqrt(2)
    return matrix


def phash(image: PILImage) -> int:
    """The 64-bit DCT hash of a PIL image: the lowest 8x8 frequencies of a 32x32 grey thumbnail above their median."""
    dct = _dct_matrix()
    low = (dct @ _grey(image, (32, 32)) @ dct.T)[:8, :8]
    median = np.median(low.ravel()[1:])  # the mean (0, 0) term would skew the median
    return _pack(low > median)


_HASHERS = {"dhash": dhash, "phash": phash}


def check_method(method: str) -> str:
    """``method`` if it names a perceptual hash."""
    if method not in _HASHERS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise InvalidOptionError(msg)
    return method


def hash_batch(values: list[Any], first: int, method: str) -> dict[str, np.ndarray]:
    """The perceptual hash of each encoded image (0 with ``valid`` False for a row with no image)."""
    hasher = _HASHERS[method]
    hashes = np.zeros(len(values), dtype=np.uint64)
    valid = np.zeros(len(values), dtype=bool)
    for i, data in enumerate(values):
        if data is None:
            continue
        with decode_image_bytes(data) as image:
            hashes[i] = hasher(image)
        valid[i] = True
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
