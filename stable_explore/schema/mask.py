"""``Mask``: a label map per row (one class index per pixel), stored as a lossless PNG."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.class_label import ClassLabel
from stable_explore.schema.image_header import check_image_bytes

__all__ = ["Mask"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True, repr=False, eq=False)
class Mask(Feature):
    r"""A segmentation label map: one class index per pixel, stored as PNG bytes (large_binary).

    Written as a 2-D integer array (H, W) (uint8 when every value is below 256, else uint16), a
    grey PNG's bytes, its path, or a PIL image in mode ``L``, ``P`` or ``I;16``; read back as a
    numpy array (``image_format="bytes"``: the PNG's bytes). Values index ``names``; others
    (255 as an "ignore" mark, say) are kept as they are. Listing a dataset never decodes a mask.

    Examples
    --------
    >>> import numpy as np
    >>> mask = Mask(names=["background", "cat"])
    >>> stored = mask.encode_value(np.array([[0, 1], [1, 1]], dtype=np.uint8))
    >>> stored[:4], mask.decode_value(stored).tolist()
    (b'\x89PNG', [[0, 1], [1, 1]])
    """

    names: list[str] | tuple[str, ...]
    _type_name: ClassVar[str] = "Mask"
    _labels: ClassLabel = field(default=None, init=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not isinstance(self.names, (list, tuple)):
            msg = f"Mask names must be a list of class names, got {self.names!r}"
            raise SchemaError(msg)
        labels = ClassLabel(names=list(self.names))
        if len(labels.names or ()) > 65536:
            msg = f"a Mask holds at most 65,536 classes (a 16-bit PNG), got {len(labels.names or ())}"
            raise SchemaError(msg)
        object.__setattr__(self, "names", labels.names)
        object.__setattr__(self, "_labels", labels)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mask) and self.names == other.names

    def __hash__(self) -> int:
        return hash(("Mask", self.names))

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.large_binary()

    @property
    def labels(self) -> ClassLabel:
        """The classes as a :class:`ClassLabel`."""
        return self._labels

    @override
    def encode_value(self, value: object) -> Any:
        from PIL import Image as PILImage

        if value is None:
            return None
        if isinstance(value, Mapping) and value.get("bytes") is not None:
            value = value["bytes"]
        elif isinstance(value, Mapping) and value.get("path") is not None:
            value = Path(value["path"])
        if isinstance(value, (str, Path)):
            try:
                value = Path(value).read_bytes()
            except OSError as exc:
                msg = f"cannot read mask file {str(value)!r}: {exc.strerror or exc}"
                raise EncodingError(msg) from exc
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            if not data.startswith(_PNG_SIGNATURE):
                msg = f"expected a mask as PNG bytes (lossless), got {len(data)} bytes starting {data[:8]!r}"
                raise EncodingError(msg)
            check_image_bytes(data, 0)
            return data
        if isinstance(value, PILImage.Image):
            if value.mode not in ("L", "P", "I;16", "I"):
                msg = f"expected a mask image in mode L, P or I;16 (one class index per pixel), got mode {value.mode}"
                raise EncodingError(msg)
            value = np.asarray(value)
        if isinstance(value, np.ndarray):
            return _array_png(value)
        msg = f"expected a mask as a 2-D integer array, PNG bytes, a path or a PIL image, got {describe(value)}"
        raise EncodingError(msg)

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        from PIL import Image as PILImage

        if value is None or image_format == "bytes":
            return value
        with PILImage.open(io.BytesIO(value)) as image:
            array = np.asarray(image)
        if array.dtype.kind in "iu" and array.dtype.itemsize > 1:
            array = array.astype(np.uint16)
        return array

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "names": list(self.names)}

    def __repr__(self) -> str:
        names = list(self.names)
        shown = names if len(names) <= 10 else [*names[:10], f"... {len(names) - 10} more"]
        return f"Mask(names={shown!r})"


def _array_png(array: np.ndarray) -> bytes:
    from PIL import Image as PILImage

    if array.ndim != 2 or array.dtype.kind not in "iub" or 0 in array.shape:
        msg = f"expected a mask as a non-empty 2-D integer array (H, W), got {array.dtype} {array.shape}"
        raise EncodingError(msg)
    low, high = (int(array.min()), int(array.max()))
    if low < 0 or high > 65535:
        msg = f"expected mask values in [0, 65535] (class indexes), got values from {low} to {high}"
        raise EncodingError(msg)
    pixels = np.ascontiguousarray(array, dtype=np.uint8 if high < 256 else np.uint16)
    buffer = io.BytesIO()
    image = PILImage.fromarray(pixels)  # uint16 becomes mode I;16: a 16-bit grey PNG
    image.save(buffer, format="PNG")
    return buffer.getvalue()
