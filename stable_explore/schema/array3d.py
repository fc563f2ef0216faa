"""``Array3D``: a fixed-shape 3-D array, stored as its C-order bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature

__all__ = ["Array3D"]

_ARRAY_DTYPES = (
    *("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    *("float16", "float32", "float64"),
)


@dataclass(frozen=True, repr=False)
class Array3D(Feature):
    """A fixed-shape 3-D array, stored as its C-order bytes; the shape is checked on write.

    Examples
    --------
    >>> import numpy as np
    >>> feature = Array3D(shape=(2, 2, 1), dtype="uint8")
    >>> feature.decode_value(feature.encode_value(np.ones((2, 2, 1), dtype=np.uint8))).shape
    (2, 2, 1)
    """

    shape: tuple[int, int, int]
    dtype: str = "float32"
    _type_name: ClassVar[str] = "Array3D"

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        ok = all(
            isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) and 0 < d < 2**31 for d in shape
        )
        if len(shape) != 3 or not ok:
            msg = f"Array3D shape must be three positive ints, got {self.shape!r}"
            raise SchemaError(msg)
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        if self.dtype not in _ARRAY_DTYPES:
            msg = f"Array3D dtype must be one of {list(_ARRAY_DTYPES)}, got {self.dtype!r}"
            raise SchemaError(msg)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.large_binary()

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        array = np.asarray(value)
        if array.shape != self.shape:
            msg = f"expected an array of shape {self.shape}, got shape {array.shape}"
            raise EncodingError(msg)
        if not np.can_cast(array.dtype, self.dtype, casting="same_kind"):
            msg = f"expected dtype {self.dtype}, got {array.dtype} (which cannot be cast safely)"
            raise EncodingError(msg)
        return np.ascontiguousarray(array, dtype=self.dtype).tobytes()

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return np.frombuffer(value, dtype=self.dtype).reshape(self.shape)

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "shape": list(self.shape), "dtype": self.dtype}
