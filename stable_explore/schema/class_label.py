"""``ClassLabel``: a class label, stored as an int, written as a name or an int."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore._canonical import unencodable_text
from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe

__all__ = ["ClassLabel", "class_name"]

_LABEL_FAST_TYPES = {str, int, np.str_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32}


@dataclass(frozen=True, repr=False, eq=False)
class ClassLabel(Feature):
    """A class label: stored as int64, written as a name or an int, read back as an int.

    Give ``names`` (a list of strings) or ``num_classes`` (names are then
    ``"0"``, ``"1"``, ...).

    Examples
    --------
    >>> labels = ClassLabel(names=["cat", "dog"])
    >>> labels.str2int(["dog", "cat"]), labels.int2str(0)
    ([1, 0], 'cat')
    """

    names: list[str] | tuple[str, ...] | None = None
    num_classes: int | None = None
    _type_name: ClassVar[str] = "ClassLabel"
    _lookup: dict[Any, int] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        names = self.names
        if names is None:
            if self.num_classes is None:
                msg = "ClassLabel needs names=[...] or num_classes=N"
                raise SchemaError(msg)
            names = [str(i) for i in range(int(self.num_classes))]
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            msg = f"ClassLabel names must be a list of strings, got {names!r}"
            raise SchemaError(msg)
        names = tuple(names)
        for position, name in enumerate(names):
            problem = unencodable_text(name)
            if problem:
                msg = f"ClassLabel name {position} ({name!r}) cannot be stored as UTF-8: {problem}; rename the class"
                raise SchemaError(msg)
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            msg = f"ClassLabel names must be unique; repeated: {dupes}"
            raise SchemaError(msg)
        if self.num_classes is not None and int(self.num_classes) != len(names):
            msg = f"ClassLabel got {len(names)} names but num_classes={self.num_classes}"
            raise SchemaError(msg)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "num_classes", len(names))
        lookup: dict[object, int] = {name: i for i, name in enumerate(names)}
        # Ints map to themselves; checked before names so a class named "3" cannot shadow 3.
        lookup.update({i: i for i in range(len(names))})
        object.__setattr__(self, "_lookup", lookup)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassLabel) and self.names == other.names

    def __hash__(self) -> int:
        return hash(("ClassLabel", self.names))

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.int64()

    def str2int(self, name: str | Iterable[str]) -> int | list[int]:
        """Class index of a name (or of each name in a list)."""
        if isinstance(name, str):
            return self._index_of_name(name)
        return [self._index_of_name(n) for n in name]

    def int2str(self, index: int | Iterable[int]) -> str | list[str]:
        """Class name of an index (or of each index in a list)."""
        assert self.names is not None
        if isinstance(index, (int, np.integer)):
            return self.names[self._checked_int(int(index))]
        return [self.names[self._checked_int(int(i))] for i in index]

    def _index_of_name(self, name: str) -> int:
        if not isinstance(name, str) or name not in self._lookup:
            raise EncodingError(self._unknown_message(name))
        return self._lookup[name]

    def _checked_int(self, index: int) -> int:
        if not 0 <= index < (self.num_classes or 0):
            msg = f"expected a class index in [0, {self.num_classes}), got {index}"
            raise EncodingError(msg)
        return index

    def _unknown_message(self, value: object) -> str:
        assert self.names is not None
        shown = list(self.names[:20]) + (["..."] if len(self.names) > 20 else [])
        msg = f"unknown class {describe(value)}; expected one of {shown} or an int in [0, {self.num_classes})"
        if isinstance(value, str):
            close = difflib.get_close_matches(value, self.names, n=3)
            if close:
                msg += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        return msg

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        if isinstance(value, (bool, np.bool_, float, np.floating)):
            raise EncodingError(self._unknown_message(value))  # 1.0 or True would pass as 1 by hashing
        try:
            return self._lookup[value]
        except (KeyError, TypeError):
            if isinstance(value, (int, np.integer)) and int(value) == -1:
                return -1  # "no label", as in Hugging Face datasets
            raise EncodingError(self._unknown_message(value)) from None

    @override
    def encode_column(self, values: list[object]) -> pa.Array:
        lookup = self._lookup
        # floats and bools would hash like ints (1.0 == True == 1): they take the slow path, which refuses them
        if not set(map(type, values)) <= _LABEL_FAST_TYPES:
            return super().encode_column(values)
        try:
            codes = list(map(lookup.__getitem__, values))
        except KeyError:
            return super().encode_column(values)
        return pa.array(codes, type=pa.int64())

    @override
    def encode_arrow(self, array: pa.Array) -> pa.Array:
        t = array.type
        if pa.types.is_dictionary(t):
            return self.encode_arrow(array.dictionary_decode())
        if pa.types.is_integer(t):
            codes = array.cast(pa.int64())
            numbers = codes.fill_null(0).to_numpy(zero_copy_only=False) if codes.null_count else codes.to_numpy()
            if bool((((numbers >= 0) & (numbers < (self.num_classes or 0))) | (numbers == -1)).all()):
                return codes
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

            codes = pc.index_in(array, value_set=pa.array(list(self.names or ()), type=t))
            if codes.null_count == array.null_count:
                return codes.cast(pa.int64())
        return super().encode_arrow(array)  # the Python path names the first value it refuses

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "names": list(self.names or ())}

    def __repr__(self) -> str:
        names = list(self.names or ())
        shown = names if len(names) <= 10 else [*names[:10], f"... {len(names) - 10} more"]
        return f"ClassLabel(names={shown!r})"


def class_name(feature: object, value: object) -> Any:
    """A label's class name where ``feature`` is a ClassLabel and ``value`` a valid index; else ``value``."""
    if isinstance(feature, ClassLabel) and isinstance(value, int) and 0 <= value < (feature.num_classes or 0):
        return feature.int2str(value)
    return value
