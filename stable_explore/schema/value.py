"""``Value``: a scalar column (bools, ints, floats, strings, bytes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe

__all__ = ["Value"]

VALUE_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
}
_VALUE_ALIASES = {"float": "float32", "double": "float64", "int": "int64", "str": "string", "boolean": "bool"}
_TEXT_AND_BINARY = frozenset({"string", "large_string", "binary", "large_binary"})


@dataclass(frozen=True, repr=False)
class Value(Feature):
    """A scalar: ``bool``, ``int8``..``int64``, ``uint8``..``uint64``, ``float16/32/64``, ``string``, ``binary``.

    Examples
    --------
    >>> Value("int64").arrow_type
    DataType(int64)
    """

    dtype: str
    _type_name: ClassVar[str] = "Value"

    def __post_init__(self) -> None:
        dtype = _VALUE_ALIASES.get(self.dtype, self.dtype)
        if dtype not in VALUE_TYPES:
            msg = f"Value dtype must be one of {sorted(VALUE_TYPES)}, got {self.dtype!r}"
            raise SchemaError(msg)
        object.__setattr__(self, "dtype", dtype)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return VALUE_TYPES[self.dtype]

    @override
    def encode_value(self, value: Any) -> Any:
        if hasattr(value, "item") and not isinstance(value, (bytes, str)):
            value = value.item()  # numpy scalar
        if isinstance(value, float) and pa.types.is_integer(self.arrow_type):
            if not value.is_integer():
                msg = f"expected {self.dtype}, got {describe(value)}, which would be truncated"
                raise EncodingError(msg)
            value = int(value)
        try:
            pa.array([value], type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            msg = f"expected {self.dtype}, got {describe(value)}"
            raise EncodingError(msg) from exc
        return value

    @override
    def encode_batch(self, values: list[Any]) -> tuple[pa.Array, bool]:
        return self.encode_column(values), self.dtype in _TEXT_AND_BINARY

    @override
    def encode_column(self, values: list[Any]) -> pa.Array:
        t = self.arrow_type
        try:
            array = pa.array(values, type=t)
            # A typed conversion would silently truncate 3.5 to 3 in an integer column.
            if pa.types.is_integer(t) and any(issubclass(k, (float, np.floating)) for k in set(map(type, values))):
                self._raise_first_bad(values)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            self._raise_first_bad(values)
            raise
        return array

    def _raise_first_bad(self, values: list[Any]) -> None:
        for position, value in enumerate(values):
            try:
                self.encode_value(value)
            except EncodingError as exc:
                raise exc.located(index=position) from exc.__cause__

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "dtype": self.dtype}
