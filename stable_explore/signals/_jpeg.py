"""A faster grey decode of JPEG bytes through libjpeg-turbo (``simplejpeg``), where it is installed.

The hashes and statistics need only a grey image, often a small one: libjpeg-turbo decodes straight to
grey at a reduced scale (its DCT scaling, any eighth from 1/8 up) with less per-image overhead than
Pillow's open, draft and convert. It is used when ``simplejpeg`` imports and the environment variable
:data:`PILLOW_ONLY_ENV` is not set; anything it does not take (not a JPEG, a CMYK JPEG, a broken one)
goes through Pillow as before.

Examples
--------
>>> grey_jpeg(b"not a jpeg", 64, 64, decoder=None) is None
True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np

PILLOW_ONLY_ENV = "STABLE_EXPLORE_PILLOW_ONLY"
"""Set to 1 to decode every image with Pillow, even where ``simplejpeg`` is installed."""
_JPEG_START = b"\xff\xd8\xff"
_COLOUR_SPACES = {"Gray": 1, "YCbCr": 3, "RGB": 3}  # what libjpeg-turbo turns into grey; CMYK and YCCK go to Pillow
Plan = TypeVar("Plan")


def fast_decoder() -> ModuleType | None:
    """The ``simplejpeg`` module when it is installed and :data:`PILLOW_ONLY_ENV` is not set, else None.

    Examples
    --------
    >>> import os
    >>> os.environ[PILLOW_ONLY_ENV] = "1"
    >>> fast_decoder() is None
    True
    >>> del os.environ[PILLOW_ONLY_ENV]
    """
    if os.environ.get(PILLOW_ONLY_ENV, "").strip() not in ("", "0"):
        return None
    from importlib import import_module

    try:
        return import_module("simplejpeg")
    except ImportError:
        return None


def jpeg_header(decoder: ModuleType | None, data: bytes) -> tuple[int, int, int] | None:
    """(width, height, channels) of a JPEG ``decoder`` can turn into grey, else None (then Pillow decodes it)."""
    if decoder is None or data[:3] != _JPEG_START:
        return None
    try:
        height, width, colour, _ = decoder.decode_jpeg_header(data)
    except ValueError:
        return None
    channels = _COLOUR_SPACES.get(colour)
    return None if channels is None else (int(width), int(height), channels)


def draft_scale(width: int, height: int, min_width: int, min_height: int) -> int:
    """The reduction (1, 2, 4 or 8) Pillow's draft mode picks: the largest leaving ``min_width`` x ``min_height``.

    Examples
    --------
    >>> draft_scale(300, 225, 64, 64), draft_scale(40, 30, 18, 16), draft_scale(512, 512, 0, 0)
    (2, 1, 1)
    """
    if min_width <= 0 or min_height <= 0:
        return 1
    room = min(width // min_width, height // min_height)
    return next(factor for factor in (8, 4, 2, 1) if room >= factor or factor == 1)


def grey_jpeg(
    data: bytes,
    min_width: int,
    min_height: int,
    *,
    decoder: ModuleType | None,
    fast: bool = True,
    header: tuple[int, int, int] | None = None,
) -> np.ndarray | None:
    """A JPEG decoded in grey at 1/2, 1/4 or 1/8 scale as Pillow's draft mode picks it (0: full size).

    The same scale as Pillow's (:func:`draft_scale`; libjpeg-turbo alone would also take 3/8, 5/8...),
    so a hash moves by less than a bit between the two paths. None where ``decoder`` is None or does
    not take these bytes (then the caller decodes with Pillow). ``fast``: libjpeg-turbo's faster,
    slightly less exact inverse DCT (the hashes; statistics pass False). ``header``: what
    :func:`jpeg_header` gave for these bytes, where the caller has it (not read twice).
    """
    if header is None:
        header = jpeg_header(decoder, data)
    if header is None:
        return None
    assert decoder is not None
    width, height, _ = header
    factor = draft_scale(width, height, min_width, min_height)
    try:
        grey: np.ndarray = decoder.decode_jpeg(
            data, colorspace="GRAY", fastdct=fast, min_width=-(-width // factor), min_height=-(-height // factor)
        )
    except ValueError:
        return None
    return grey[:, :, 0] if grey.ndim == 3 else grey


class JpegPlans(Generic[Plan]):
    """What a batch does with each JPEG, worked out once per (width, height, channels) its header gives.

    ``plan(width, height, channels)`` gives what to do with a JPEG of that size (where to decode it, with
    which options), or None for Pillow; it runs once per size in a batch, not once per image, since a
    dataset's images mostly share a few sizes. :meth:`of` answers None where :func:`jpeg_header` does
    (no ``decoder``, not a JPEG, a CMYK one, a broken header). :attr:`decode` is the decoder's
    ``decode_jpeg`` (None without one).

    Examples
    --------
    >>> JpegPlans(None, lambda width, height, channels: width).of(b"not a jpeg") is None
    True
    """

    def __init__(self, decoder: ModuleType | None, plan: Callable[[int, int, int], Plan | None]) -> None:
        self.decoder = decoder
        self.decode: Any = getattr(decoder, "decode_jpeg", None)
        self._plan = plan
        self._known: dict[tuple[int, int, int], Plan | None] = {}

    def of(self, data: bytes) -> tuple[tuple[int, int, int], Plan] | None:
        """((width, height, channels), what to do) for these bytes, or None (then Pillow decodes them)."""
        header = jpeg_header(self.decoder, data)
        if header is None:
            return None
        if header not in self._known:
            self._known[header] = self._plan(*header)
        planned = self._known[header]
        return None if planned is None else (header, planned)
