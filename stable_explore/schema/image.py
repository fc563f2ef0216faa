"""``Image``: an image column, stored as the image's encoded bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.image_batch_check import check_image_column
from stable_explore.schema.image_codec import (
    decode_image_bytes,
    encode_array_as_png,
    encode_in_threads,
    encode_pil,
    image_array,
    is_pil_image,
)
from stable_explore.schema.image_header import check_image_bytes, check_pixel_count, default_max_pixels

__all__ = ["Image"]


@dataclass(frozen=True, repr=False)
class Image(Feature):
    r"""An image, stored as its encoded bytes (large_binary).

    Accepts encoded bytes, a file path, a PIL image, a numpy array (H, W) or
    (H, W, C), or a dict with ``"bytes"`` or ``"path"``. Files and bytes are
    kept byte for byte (a JPEG stays the same JPEG); PIL images keep their
    source format (JPEG re-saved with its own quantisation tables) or become
    PNG when they have no format or have alpha; arrays become PNG.

    Every image's header is read before it is stored: bytes that are no image,
    a PNG or JPEG cut short, and images of more than ``max_pixels`` pixels
    (default: PIL's decompression-bomb limit, ``PIL.Image.MAX_IMAGE_PIXELS``;
    0: no limit) are refused with an error naming the row, key and field.

    Examples
    --------
    >>> import numpy as np
    >>> stored = Image().encode_value(np.zeros((4, 4, 3), dtype=np.uint8))
    >>> stored[:4]
    b'\x89PNG'
    """

    max_pixels: int | None = None
    _type_name: ClassVar[str] = "Image"

    def __post_init__(self) -> None:
        limit = self.max_pixels
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            msg = f"Image max_pixels must be a non-negative int (0: no limit) or None, got {limit!r}"
            raise SchemaError(msg)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.large_binary()

    @override
    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self._checked_bytes(bytes(value))
        if isinstance(value, (str, Path)):
            return self._read_file(Path(value))
        if isinstance(value, Mapping):
            if value.get("bytes") is not None:
                return self._checked_bytes(bytes(value["bytes"]))
            if value.get("path") is not None:
                return self._read_file(Path(value["path"]))
            msg = f"expected a dict with 'bytes' or 'path', got keys {sorted(value)}"
            raise EncodingError(msg)
        if isinstance(value, np.ndarray):
            if value.ndim in (2, 3):
                check_pixel_count("array", (value.shape[1], value.shape[0]), self.max_pixels)
            return encode_array_as_png(value)
        if is_pil_image(value):
            check_pixel_count("PIL", value.size, self.max_pixels)
            return encode_pil(value)
        msg = f"expected image bytes, a path, a PIL image or a numpy array, got {describe(value)}"
        raise EncodingError(msg)

    @override
    def encode_batch(self, values: list[object]) -> tuple[pa.Array, bool]:
        # Fast path: already-encoded bytes (the common bulk case), their headers checked all at once.
        if values and set(map(type, values)) == {bytes}:
            array = pa.array(values, type=pa.large_binary())
            check_image_column(array, self._limit())
            return array, True
        return super().encode_column(values), False

    @override
    def encode_column(self, values: list[object]) -> pa.Array:
        return self.encode_batch(values)[0]

    @override
    def encode_arrow(self, array: pa.Array) -> pa.Array:
        if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
            stored = array.cast(pa.large_binary()) if pa.types.is_binary(array.type) else array
            check_image_column(stored, self._limit())
            return stored
        return super().encode_arrow(array)  # paths, {"bytes", "path"} structs: one value at a time

    def _limit(self) -> int:
        """The pixel limit for this batch (0: none), read once a batch."""
        return self.max_pixels if self.max_pixels is not None else (default_max_pixels() or 0)

    def _encode_values(self, values: list[object], start: int = 0) -> list[Any]:
        # Arrays and PIL images are compressed by PIL, which releases the GIL while it works: big batches
        # of them are shared out among threads (see image_codec); small ones stay on this thread.
        encode_part = super()._encode_values  # bound here: zero-argument super() fails inside a closure
        return encode_in_threads(values, start, encode_part)

    def _checked_bytes(self, data: bytes) -> bytes:
        check_image_bytes(data, self.max_pixels)
        return data

    def _read_file(self, path: Path) -> bytes:
        try:
            data = path.read_bytes()
        except OSError as exc:
            msg = f"cannot read image file {str(path)!r}: {exc.strerror or exc}"
            raise EncodingError(msg) from exc
        try:
            return self._checked_bytes(data)
        except EncodingError as exc:
            msg = f"file {str(path)!r}: {exc.reason}"
            raise EncodingError(msg) from exc

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None or image_format == "bytes":
            return value
        image = decode_image_bytes(value, self.max_pixels)
        if image_format == "numpy":
            with image:
                return image_array(image)  # strip by strip: no whole-image bytes copy on the way
        return image

    @override
    def to_dict(self) -> dict[str, Any]:
        # max_pixels only when set, so that the schema (and every version id) of Image() stays as it was
        return {"_type": self._type_name, **({"max_pixels": self.max_pixels} if self.max_pixels is not None else {})}

    def __repr__(self) -> str:
        return "Image()" if self.max_pixels is None else f"Image(max_pixels={self.max_pixels})"
