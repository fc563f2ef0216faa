"""The base of every feature type, and the helpers their error messages share."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stable_explore.errors import EncodingError

__all__ = ["Feature", "describe", "first_bad_element", "is_missing_mark"]


def describe(value: object) -> str:
    """A value for an error message: its repr (cut at 60 characters) and its type.

    pandas' marks of a missing value (NaN outside a float column, ``NA``, ``NaT``: what a row of a
    DataFrame holds where a value is missing) say what to give instead.

    Examples
    --------
    >>> describe("a" * 70)
    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... (str)"
    >>> describe(float("nan"))
    'nan (float: a missing value as pandas marks it; give None for one, or use se.from_pandas)'
    """
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = type(value).__name__
    if _marks_missing(value):
        return f"{text} ({kind}: a missing value as pandas marks it; give None for one, or use se.from_pandas)"
    return f"{text} ({kind})"


def _marks_missing(value: object) -> bool:
    """NaN, ``pandas.NA``, ``pandas.NaT`` or a NumPy ``NaT``: how pandas and NumPy mark a missing value."""
    return is_missing_mark(value, keeps_nan=False)


def is_missing_mark(value: object, *, keeps_nan: bool) -> bool:
    """Whether a value from a DataFrame is pandas' (or NumPy's) mark of a missing value, to be stored as a null.

    ``NA`` and ``NaT`` always are; NaN is unless ``keeps_nan`` (a float column, where NaN is a value).

    Examples
    --------
    >>> is_missing_mark(float("nan"), keeps_nan=False), is_missing_mark(float("nan"), keeps_nan=True)
    (True, False)
    >>> is_missing_mark(np.datetime64("NaT"), keeps_nan=True), is_missing_mark("", keeps_nan=False)
    (True, False)
    """
    if isinstance(value, (float, np.floating)):
        return not keeps_nan and bool(value != value)
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    return type(value).__name__ in ("NAType", "NaTType") and type(value).__module__.startswith("pandas")


class Feature:
    """Base class of feature types.

    Subclasses define ``arrow_type``, ``encode_value`` (one Python value to an
    Arrow-compatible one) and ``decode_value`` (the stored value back to what
    users get). ``encode_column`` encodes a whole batch; subclasses override it
    with a vectorised path where one exists.
    """

    _type_name: ClassVar[str]

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type a column of this feature is stored as."""
        raise NotImplementedError

    def encode_value(self, value: object) -> Any:
        """One Python value as what is stored; raises :class:`EncodingError` saying what was expected."""
        raise NotImplementedError

    def decode_value(self, value: object, *, image_format: str = "pil") -> Any:
        """A stored value as users get it (``image_format``: ``"pil"``, ``"numpy"`` or ``"bytes"``)."""
        return value

    def encode_batch(self, values: list[object]) -> tuple[pa.Array, bool]:
        """Encode one batch; also say whether the stored bytes are exactly ``values`` (then they hash as they are)."""
        return self.encode_column(values), False

    def encode_arrow(self, array: pa.Array) -> pa.Array:
        """Encode one column given as Arrow (a column batch's), with the same checks as its Python values get.

        Raises EncodingError with ``index`` = position in ``array``. This one converts the values
        to Python and encodes them as a row build does; subclasses take the Arrow types they can
        check as they are (without a Python object per value) and leave the rest to it.
        """
        return self.encode_batch(array.to_pylist())[0]

    def encode_column(self, values: list[object]) -> pa.Array:
        """Encode one batch of values. Raises EncodingError with ``index`` = position in ``values``."""
        encoded = self._encode_values(values)
        try:
            return pa.array(encoded, type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise first_bad_element(encoded, self.arrow_type, exc) from exc

    def _encode_values(self, values: list[object], start: int = 0) -> list[Any]:
        """``encode_value`` of each value; an error is located at ``start`` + its position."""
        encoded = []
        for position, value in enumerate(values):
            try:
                encoded.append(self.encode_value(value))
            except EncodingError as exc:
                raise exc.located(index=start + position) from exc.__cause__
        return encoded

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form that :func:`~stable_explore.schema.feature_from_dict` reads back."""
        return {"_type": self._type_name}

    def __repr__(self) -> str:
        body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.init)  # type: ignore[arg-type]
        return f"{type(self).__name__}({body})"


def first_bad_element(values: list[object], arrow_type: pa.DataType, exc: BaseException) -> EncodingError:
    """Find which element made a whole-column conversion fail, for the message."""
    for position, value in enumerate(values):
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as inner:
            return EncodingError(f"expected {arrow_type}, got {describe(value)}: {inner}", index=position)
    return EncodingError(f"could not build an Arrow {arrow_type} column: {exc}")
