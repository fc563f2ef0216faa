"""``Video``: a video column, stored as Hugging Face's ``struct<bytes, path>``; read back as a :class:`VideoFile`.

A cell holds the video's path (``bytes`` null) or its encoded bytes (``path`` null, or the file's
name beside them with ``Video(embed=True)``). Older caches (ours before this layout, and
stable-datasets' format version 1) store a ``string`` column of paths; those open, decode and
export as before: every reader goes through :func:`video_source` and :func:`video_struct_array`,
which take either layout.

Examples
--------
>>> Video().encode_value("clips/cat.mp4")
{'bytes': None, 'path': 'clips/cat.mp4'}
>>> video_source({"bytes": None, "path": "clips/cat.mp4"}), video_source("clips/cat.mp4")
('clips/cat.mp4', 'clips/cat.mp4')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.video_file import VideoFile

__all__ = [
    "VIDEO_STORAGE",
    "Video",
    "VideoFile",
    "is_video_storage",
    "video_cell",
    "video_path_array",
    "video_source",
    "video_struct_array",
]

VIDEO_STORAGE = pa.struct([pa.field("bytes", pa.large_binary()), pa.field("path", pa.string())])
"""How a ``Video`` column is stored: Hugging Face's ``Video`` layout (its bytes as ``large_binary``)."""


@dataclass(frozen=True, repr=False)
class Video(Feature):
    r"""A video: its file's path, or its encoded bytes, stored as ``struct<bytes: large_binary, path: string>``.

    A path (``str`` / ``Path``) is kept as a path: the file is not copied, so the cache needs the
    file where it was. Bytes (``bytes``, ``bytearray``, ``memoryview``) or a binary file object
    are stored as bytes. With ``embed=True`` a path's file is read and its bytes stored beside
    the path (kept as the video's name), so the cache holds the video itself: it still plays
    after the file is gone, and on a bucket home. A dict ``{"bytes": ..., "path": ...}`` (how
    Hugging Face ``datasets`` hands a video cell over) is taken as it is.

    ``ds[i]["video"]`` is a :class:`VideoFile`: ``len``, frames by index or slice, a poster frame,
    and a player in notebooks. Decoding needs PyAV (``pip install 'stable-explore[video]'``).

    Examples
    --------
    >>> Video().encode_value(b"\x00\x00\x00\x18ftypmp42")["path"] is None
    True
    >>> Video().arrow_type == VIDEO_STORAGE, Video(embed=True)
    (True, Video(embed=True))
    """

    embed: bool = False
    _type_name: ClassVar[str] = "Video"

    def __post_init__(self) -> None:
        if not isinstance(self.embed, bool):
            msg = f"Video embed must be True or False, got {describe(self.embed)}"
            raise SchemaError(msg)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return VIDEO_STORAGE

    @override
    def encode_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, VideoFile):
            value = {"bytes": value.bytes, "path": value.path}
        if isinstance(value, (str, os.PathLike)):
            path = str(value)
            return {"bytes": self._read(path) if self.embed else None, "path": path}
        if isinstance(value, (bytes, bytearray, memoryview)):
            return {"bytes": bytes(value), "path": None}
        if isinstance(value, Mapping):
            return self._from_dict(value)
        if callable(getattr(value, "read", None)):
            data = value.read()
            if not isinstance(data, (bytes, bytearray)):
                msg = f"expected a binary file object, got one whose read() gives {type(data).__name__}"
                raise EncodingError(msg)
            name = getattr(value, "name", None)
            return {"bytes": bytes(data), "path": name if isinstance(name, str) else None}
        msg = f"expected a video file path, the video's bytes or a binary file object, got {describe(value)}"
        raise EncodingError(msg)

    def _from_dict(self, value: Mapping[str, object]) -> dict[str, Any]:
        data, path = value.get("bytes"), value.get("path")
        if data is None and path is None:
            msg = f"expected a dict with 'bytes' or 'path', got keys {sorted(value)}"
            raise EncodingError(msg)
        if path is not None and not isinstance(path, (str, os.PathLike)):
            msg = f"expected the video's 'path' to be a string, got {describe(path)}"
            raise EncodingError(msg)
        if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
            msg = f"expected the video's 'bytes' to be bytes, got {describe(data)}"
            raise EncodingError(msg)
        path = None if path is None else str(path)
        if data is None and self.embed:
            data = self._read(str(path))
        return {"bytes": None if data is None else bytes(data), "path": path}

    @staticmethod
    def _read(path: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            msg = (
                f"cannot read video file {path!r} to embed it: {exc.strerror or exc}; give an existing file, "
                "or Video() to store the path only"
            )
            raise EncodingError(msg) from exc

    @override
    def encode_arrow(self, array: pa.Array) -> pa.Array:
        if not self.embed and is_video_storage(array.type):
            return video_struct_array(array)  # paths, or structs with their bytes: no Python object per value
        return super().encode_arrow(array)

    @override
    def decode_value(self, value: object, *, image_format: str = "pil") -> Any:
        if value is None or image_format == "bytes":
            return value
        return video_cell(value)

    @override
    def to_dict(self) -> dict[str, Any]:
        # embed only when set, so that the schema (and every version id) of Video() stays as it was
        return {"_type": self._type_name, **({"embed": True} if self.embed else {})}

    def __repr__(self) -> str:
        return "Video(embed=True)" if self.embed else "Video()"


def video_cell(cell: object) -> VideoFile | None:
    """A stored ``Video`` cell (a struct's dict, or an older cache's path string) as a :class:`VideoFile`.

    Examples
    --------
    >>> video_cell("a.mp4").path, video_cell({"bytes": b"xyz", "path": None}).bytes
    ('a.mp4', b'xyz')
    """
    if cell is None:
        return None
    if isinstance(cell, VideoFile):
        return cell
    if isinstance(cell, (str, os.PathLike)):
        return VideoFile(path=str(cell))
    if isinstance(cell, Mapping):
        data, path = cell.get("bytes"), cell.get("path")
        if data is None and path is None:
            return None
        return VideoFile(path=None if path is None else str(path), bytes=None if data is None else bytes(data))
    msg = f"a stored video cell is a path or a {{'bytes', 'path'}} dict, got {describe(cell)}"
    raise SchemaError(msg)


def video_source(cell: object) -> str | bytes | None:
    """The codec source of a stored ``Video`` cell: its bytes when stored, else its path (None: no video).

    This is the one place that reads a cell's layout; pass what it returns to
    :mod:`stable_explore.schema.video_codec` (``probe``, ``read_frames``, ``poster_frame``).

    Examples
    --------
    >>> video_source({"bytes": b"...", "path": "a.mp4"}), video_source(None)
    (b'...', None)
    """
    video = video_cell(cell)
    return None if video is None else video.source


def is_video_storage(arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` holds ``Video`` cells: the struct layout, or an older cache's path strings."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return True
    return pa.types.is_struct(arrow_type) and {f.name for f in arrow_type} == {"bytes", "path"}


def video_struct_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A ``Video`` column (either layout, any binary/string widths) as :data:`VIDEO_STORAGE`, nulls kept."""
    if isinstance(array, pa.ChunkedArray):
        chunks = [video_struct_array(chunk) for chunk in array.chunks]
        return pa.concat_arrays(chunks) if chunks else pa.array([], type=VIDEO_STORAGE)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        data = pa.nulls(len(array), pa.large_binary())
        paths = array.cast(pa.string())
    elif pa.types.is_struct(array.type):
        if array.type == VIDEO_STORAGE:
            return array
        data = array.field("bytes").cast(pa.large_binary())
        paths = array.field("path").cast(pa.string())
    else:
        msg = f"a Video column is stored as {VIDEO_STORAGE} or as path strings, not {array.type}"
        raise SchemaError(msg)
    return pa.StructArray.from_arrays([data, paths], fields=list(VIDEO_STORAGE), mask=mask)


def video_path_array(array: pa.Array | pa.ChunkedArray, *, column: str, first_row: int = 0) -> pa.Array:
    """A ``Video`` column as its paths (what a path-only format such as stable-datasets' v1 holds).

    A row whose video is stored as bytes only has no path to write: :class:`SchemaError` naming
    the row (``first_row`` + its position) and the column.
    """
    structs = video_struct_array(array)
    paths = structs.field("path")
    for position, cell in enumerate(structs.to_pylist()):
        if cell is not None and cell["path"] is None:
            msg = (
                f"row {first_row + position}, field {column!r}: the video is stored as bytes only, and this layout "
                "holds a path; give the row's video a path (ds.set) or export to a layout that keeps bytes"
            )
            raise SchemaError(msg)
    mask = structs.is_null() if structs.null_count else None
    import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

    return paths if mask is None else pc.if_else(mask, pa.scalar(None, pa.string()), paths)
