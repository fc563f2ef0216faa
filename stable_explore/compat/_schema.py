"""stable-datasets' schema names over ours: ``Features``, feature types, ``DatasetInfo``, ``Version``.

Each is our own type with what stable-datasets' code relies on added: ``Features`` is also an
``OrderedDict`` and gives the text stable-datasets fingerprints, a ``ClassLabel``'s names compare
equal to a list, ``Image.encode`` is its name for encoding one value. Imported from
:mod:`stable_explore.compat.stable_datasets`.

Examples
--------
>>> features = Features({"x": Value("int32"), "label": ClassLabel(names=["a", "b"])})
>>> features.fingerprint_data(), features["label"].names == ["a", "b"]
("{'x': Value('int32'), 'label': ClassLabel(names=['a', 'b'])}", True)
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, overload

from stable_explore.errors import InvalidOptionError
from stable_explore.schema import ClassLabel as _ClassLabel
from stable_explore.schema import Features as _Features
from stable_explore.schema import Image as _Image
from stable_explore.schema import Value
from stable_explore.storage.format.stable_datasets import fingerprint_text

__all__ = ["ClassLabel", "ClassNames", "DatasetInfo", "Features", "Image", "Value", "Version"]

_T = TypeVar("_T")


class Features(_Features, OrderedDict):  # type: ignore[misc,type-arg]  # both dicts; ours first, for its methods
    """Our :class:`~stable_explore.Features`, also an ``OrderedDict`` as stable-datasets' is."""

    def fingerprint_data(self) -> str:
        """The text stable-datasets hashes into ``schema_fingerprint`` (its ``repr`` of the features)."""
        return fingerprint_text(self)


class ClassNames(tuple[str, ...]):
    """A ClassLabel's names: immutable as ours are, equal to a list of the same names as stable-datasets' list is.

    Examples
    --------
    >>> names = ClassNames(["cat", "dog"])
    >>> names == ["cat", "dog"], names == ("cat", "dog"), names + ["bird"]
    (True, True, ['cat', 'dog', 'bird'])
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return tuple.__eq__(self, other)  # NotImplemented for other types

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return tuple.__hash__(self)

    @overload  # type: ignore[override]  # a list too, where a tuple adds only tuples
    def __add__(self, other: list[_T]) -> list[str | _T]: ...
    @overload
    def __add__(self, other: tuple[_T, ...]) -> tuple[str | _T, ...]: ...
    def __add__(self, other: list[_T] | tuple[_T, ...]) -> list[str | _T] | tuple[str | _T, ...]:
        if isinstance(other, list):
            return [*self, *other]
        return tuple.__add__(self, other)

    def __radd__(self, other: list[_T]) -> list[_T | str]:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented


class ClassLabel(_ClassLabel):
    """Our :class:`~stable_explore.ClassLabel`, its ``names`` comparing equal to a list (see :class:`ClassNames`).

    Examples
    --------
    >>> ClassLabel(names=["a", "b"]).names == ["a", "b"]
    True
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "names", ClassNames(self.names or ()))


@dataclass(frozen=True, repr=False)
class Image(_Image):
    """Our :class:`~stable_explore.Image`, with stable-datasets' name for encoding one value."""

    def encode(self, value: object, *, cache_dir: Path | None = None) -> bytes | None:
        """The bytes stored for ``value`` (bytes as given, a file's bytes, a PIL image or array encoded), or None."""
        del cache_dir  # stable-datasets copies video inputs there; images need nothing
        stored: bytes | None = self.encode_value(value)
        return stored


@dataclass
class DatasetInfo:
    """What a builder says about its dataset (stable-datasets' fields)."""

    features: _Features
    description: str = ""
    supervised_keys: tuple[str, ...] | None = None  # (input column, target column)
    homepage: str = ""
    citation: str = ""
    license: str = ""
    config_name: str = ""


class Version:
    """A ``major.minor.patch`` version string."""

    def __init__(self, text: str) -> None:
        parts = text.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            msg = f"Version string must be 'major.minor.patch', got {text!r}"
            raise InvalidOptionError(msg)
        self.major, self.minor, self.patch = (int(p) for p in parts)
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Version({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(self._text)
