"""``Value``: a scalar column (bools, ints, floats, strings, bytes, dates, times, timestamps, durations)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.temporal import TEMPORAL_DTYPES, parse_temporal, to_ticks

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
    """A scalar: a bool, int, float, string, binary, date, time, timestamp or duration.

    The dtypes: ``bool``, ``int8``..``int64``, ``uint8``..``uint64``, ``float16/32/64``, ``string``,
    ``binary`` (and ``large_`` forms), ``timestamp[s|ms|us|ns]`` (with an optional ``, tz=ZONE``),
    ``date32``, ``date64``, ``time32[s|ms]``, ``time64[us|ns]``, ``duration[s|ms|us|ns]``.

    Temporal columns take ``datetime``/``date``/``time``/``timedelta`` objects, their numpy and pandas
    forms and ISO 8601 text (see ``stable_explore.schema.temporal``); a naive datetime is refused by a
    column with a zone, an aware one by a column without. Reading gives what pyarrow gives: ``datetime``,
    ``date``, ``time``, ``timedelta`` (``pandas.Timestamp`` for nanosecond timestamps).

    Examples
    --------
    >>> Value("int64").arrow_type
    DataType(int64)
    >>> Value("timestamp[us, tz=UTC]").arrow_type
    TimestampType(timestamp[us, tz=UTC])
    >>> import datetime
    >>> Value("date32").encode_value("2024-02-29")
    datetime.date(2024, 2, 29)
    """

    dtype: str
    _type_name: ClassVar[str] = "Value"

    def __post_init__(self) -> None:
        dtype = _VALUE_ALIASES.get(self.dtype, self.dtype) if isinstance(self.dtype, str) else self.dtype
        if dtype not in VALUE_TYPES:
            temporal = parse_temporal(dtype) if isinstance(dtype, str) else None  # SchemaError for a bad zone
            if temporal is None:
                msg = f"Value dtype must be one of {sorted(VALUE_TYPES)} or {list(TEMPORAL_DTYPES)}, got {self.dtype!r}"
                raise SchemaError(msg)
            dtype = temporal[0]
        object.__setattr__(self, "dtype", dtype)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        known = VALUE_TYPES.get(self.dtype)
        if known is not None:
            return known
        temporal = parse_temporal(self.dtype)
        assert temporal is not None, self.dtype
        return temporal[1]

    @property
    def is_temporal(self) -> bool:
        """Whether this is a date, time, timestamp or duration column."""
        return self.dtype not in VALUE_TYPES

    def _ticks(self, value: object) -> int:
        try:
            return to_ticks(value, self.dtype)
        except EncodingError as exc:
            msg = f"{exc.reason}; got {describe(value)}"
            raise EncodingError(msg) from None

    def _ticks_array(self, ticks: list[int | None]) -> pa.Array:
        t = self.arrow_type
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array(ticks, type=storage).view(t)

    @override
    def encode_value(self, value: object) -> Any:
        if self.is_temporal:
            if value is None:
                return None
            # What pyarrow reads back for this value, so edits and reads see one form.
            return self._ticks_array([self._ticks(value)])[0].as_py()
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
    def encode_batch(self, values: list[object]) -> tuple[pa.Array, bool]:
        return self.encode_column(values), self.dtype in _TEXT_AND_BINARY

    @override
    def encode_column(self, values: list[object]) -> pa.Array:
        t = self.arrow_type
        if self.is_temporal:
            ticks: list[int | None] = []
            for position, value in enumerate(values):
                try:
                    ticks.append(None if value is None else self._ticks(value))
                except EncodingError as exc:
                    raise exc.located(index=position) from None
            return self._ticks_array(ticks)
        try:
            array = pa.array(values, type=t)
            # A typed conversion would silently truncate 3.5 to 3 in an integer column.
            if pa.types.is_integer(t) and any(issubclass(k, (float, np.floating)) for k in set(map(type, values))):
                self._raise_first_bad(values)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            self._raise_first_bad(values)
            raise
        return array

    @override
    def encode_arrow(self, array: pa.Array) -> pa.Array:
        t = self.arrow_type
        if not self.is_temporal and _castable(array.type, t):
            try:
                stored = array if array.type == t else array.cast(t)  # a safe cast: no overflow, no truncation
                if pa.types.is_string(t) or pa.types.is_large_string(t):
                    stored.validate(full=True)  # valid UTF-8, as a Python str is
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                pass  # the Python path names the first bad value
            else:
                return stored
        return super().encode_arrow(array)

    def _raise_first_bad(self, values: list[object]) -> None:
        for position, value in enumerate(values):
            try:
                self.encode_value(value)
            except EncodingError as exc:
                raise exc.located(index=position) from exc.__cause__

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "dtype": self.dtype}


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


def _textual(t: pa.DataType) -> bool:
    kinds = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    return any(kind(t) for kind in kinds)


def _castable(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether an Arrow column of ``source`` type becomes ``target`` by a cast that refuses what a row build refuses.

    The same type; numbers to numbers (a safe cast refuses overflow and truncation, as converting
    Python numbers does); text and binary among themselves. Anything else (bools to numbers, which a
    safe cast allows and a row build refuses) takes the Python path.
    """
    return source == target or (_numeric(source) and _numeric(target)) or (_textual(source) and _textual(target))
