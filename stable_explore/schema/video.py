"""``Video``: a reference to a video file, stored as its path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError
from stable_explore.schema.base import Feature, describe

__all__ = ["Video"]


@dataclass(frozen=True, repr=False)
class Video(Feature):
    """A reference to a video file, stored as its path (a string); the file itself is not copied.

    Examples
    --------
    >>> Video().encode_value("clips/cat.mp4"), Video().arrow_type
    ('clips/cat.mp4', DataType(string))
    """

    _type_name: ClassVar[str] = "Video"

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.string()

    @override
    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, (str, Path)):
            msg = f"expected a video file path, got {describe(value)}"
            raise EncodingError(msg)
        return str(value)
