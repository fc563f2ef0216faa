"""stable-datasets' ``lance-video-frames`` layout: its ``_metadata.json`` as a frozen value (no I/O).

stable-datasets (our seed project) stores a video dataset as one Lance row per frame, with the
columns of :data:`FRAME_SCHEMA` (``video_id`` int32, ``frame_idx`` int32, ``bytes`` large_binary:
one WebP-encoded RGB frame), beside a ``_metadata.json`` naming ``format: "lance"`` and
``layout: "lance-video-frames"``. Its ``videos`` list has, per video: ``id`` (the rows'
``video_id``), ``key`` (the example's key), ``path`` (the source video), ``checksum``, ``T``
(frames), ``H`` and ``W`` (frame size), ``start_row`` (the row of its frame 0) and ``metadata``
(the example's other scalar fields, which its reader merges into each window's sample).

Its reader finds frame ``f`` of the video at list position ``v`` at Lance row
``videos[v]["start_row"] + f``, and cuts windows over ``T`` (see
:mod:`stable_explore.dataset._clip_windows`); nothing else of the rows is read.

Examples
--------
>>> raw = {"format": "lance", "layout": "lance-video-frames", "num_rows": 3,
...        "videos": [{"id": 0, "path": "a.mp4", "T": 3, "H": 4, "W": 6, "start_row": 0, "metadata": {"y": 1}}]}
>>> meta = VideoFramesMeta.from_dict(raw, source="clips/_metadata.json")
>>> meta.videos[0].frames, meta.videos[0].metadata
(3, {'y': 1})
>>> VideoFramesMeta.from_dict(meta.to_dict(), source="again").to_dict() == meta.to_dict()
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from stable_explore.errors import CacheCorruptionError

__all__ = [
    "FEATURES_KEY",
    "FRAME_SCHEMA",
    "FRAMES_VIDEO_REPR",
    "VideoFramesMeta",
    "VideoRecord",
]

FRAME_SCHEMA = pa.schema([("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())])
"""The Lance dataset's columns, as its writer gives them."""
FEATURES_KEY = "stable_explore_features"
"""Our features of the frame-level rows, kept in ``_metadata.json`` by our export (its reader ignores the key)."""
FRAMES_VIDEO_REPR = "Video(storage='frames', allowed_extensions=('.mp4', '.avi', '.mov', '.webm', '.mkv'))"
"""How stable-datasets prints the feature of the video column such a cache is built from (for its fingerprint)."""


class _BadField(ValueError):
    """A field of ``_metadata.json`` that is missing or of the wrong kind (raised as CacheCorruptionError)."""


_SCALARS = (str, int, float, bool, type(None))


def _whole(raw: Mapping[str, object], name: str, where: str, least: int) -> int:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        msg = f"{where}: field {name!r} must be a whole number >= {least}, found {value!r}"
        raise _BadField(msg)
    return value


@dataclass(frozen=True)
class VideoRecord:
    """One entry of ``videos``: where a video's frames are and what they are.

    Attributes
    ----------
    id:
        The ``video_id`` its rows carry.
    path:
        The video it was decoded from (its reader calls it the window's ``filename``).
    frames, height, width:
        ``T``, ``H`` and ``W``.
    start_row:
        The Lance row of its frame 0; frame ``f`` is row ``start_row + f``.
    key, checksum:
        The example's key and the file's checksum, as its writer records them (None when unknown).
    metadata:
        The example's other fields (scalars), merged into each window's sample by its reader.
    """

    id: int
    path: str
    frames: int
    height: int
    width: int
    start_row: int
    key: Any = None
    checksum: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: object, *, position: int, source: str) -> VideoRecord:
        """Parse ``videos[position]`` (``source`` names the file, for messages)."""
        where = f"{source}: videos[{position}]"
        if not isinstance(raw, Mapping):
            msg = f"{where} must be an object, found {type(raw).__name__}"
            raise _BadField(msg)
        path = raw.get("path")
        if not isinstance(path, str):
            msg = f"{where}: field 'path' must be a string, found {path!r}"
            raise _BadField(msg)
        where = f"{source}: video {position} ({path!r})"
        metadata = raw.get("metadata")
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping) or not all(isinstance(v, _SCALARS) for v in metadata.values()):
            msg = (
                f"{where}: field 'metadata' must be an object of strings, numbers, booleans or nulls, "
                f"found {metadata!r}"
            )
            raise _BadField(msg)
        checksum = raw.get("checksum")
        return cls(
            id=_whole(raw, "id", where, 0) if "id" in raw else position,
            path=path,
            frames=_whole(raw, "T", where, 1),
            height=_whole(raw, "H", where, 1),
            width=_whole(raw, "W", where, 1),
            start_row=_whole(raw, "start_row", where, 0),
            key=raw.get("key"),
            checksum=checksum if isinstance(checksum, str) else None,
            metadata=dict(metadata),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry as its writer lays it out."""
        return {
            "id": self.id,
            "key": self.key,
            "path": self.path,
            "checksum": self.checksum,
            "T": self.frames,
            "H": self.height,
            "W": self.width,
            "start_row": self.start_row,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class VideoFramesMeta:
    """A ``lance-video-frames`` cache's ``_metadata.json``.

    Attributes
    ----------
    videos:
        One :class:`VideoRecord` per video, in the order of the list (its reader's ``video_idx``).
    num_rows:
        Frames in the Lance dataset (``num_rows``; the sum of the videos' ``T``).
    schema_fingerprint:
        The fingerprint of the features it was built from (its reader does not check it for this layout).
    quality:
        The WebP quality the frames were encoded at (None: not recorded); ``lossless`` when lossless.
    video_column:
        The builder's video column.
    features:
        Our features of the frame-level rows (JSON), when our export wrote the cache.
    extra:
        Every other field, kept as found.
    """

    videos: tuple[VideoRecord, ...]
    num_rows: int
    schema_fingerprint: str = ""
    quality: int | None = None
    lossless: bool = False
    video_column: str | None = None
    features: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, object], *, source: str) -> VideoFramesMeta:
        """Parse and check a ``_metadata.json`` (``source`` names it in messages).

        Raises
        ------
        CacheCorruptionError
            A field is missing or of the wrong kind, or ``num_rows`` is not the sum of the videos' ``T``.
        """
        try:
            return cls._parse(raw, source)
        except _BadField as exc:
            raise CacheCorruptionError(source, str(exc).removeprefix(f"{source}: ")) from None

    @classmethod
    def _parse(cls, raw: Mapping[str, object], source: str) -> VideoFramesMeta:
        listed = raw.get("videos")
        if not isinstance(listed, list) or not listed:
            msg = f"{source}: field 'videos' must be a non-empty list (one entry per video), found {listed!r}"
            raise _BadField(msg)
        videos = tuple(VideoRecord.from_dict(entry, position=i, source=source) for i, entry in enumerate(listed))
        total = sum(video.frames for video in videos)
        num_rows = raw.get("num_rows", total)
        if num_rows != total:
            msg = f"{source}: num_rows is {num_rows!r} but the videos' T add up to {total}"
            raise _BadField(msg)
        quality = raw.get("quality")
        features = raw.get(FEATURES_KEY)
        column = raw.get("video_column")
        known = {"videos", "num_rows", "schema_fingerprint", "quality", "lossless", "video_column", FEATURES_KEY}
        return cls(
            videos=videos,
            num_rows=total,
            schema_fingerprint=str(raw.get("schema_fingerprint") or ""),
            quality=quality if isinstance(quality, int) and not isinstance(quality, bool) else None,
            lossless=raw.get("lossless") is True,
            video_column=column if isinstance(column, str) else None,
            features=features if isinstance(features, Mapping) else None,
            extra={k: v for k, v in raw.items() if k not in known},
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``_metadata.json`` its writer gives (plus ``lossless`` and our features, which its reader ignores)."""
        meta: dict[str, object] = {
            "cache_format_version": 1,
            "format": "lance",
            "layout": "lance-video-frames",
            "schema_fingerprint": self.schema_fingerprint,
            "num_rows": self.num_rows,
            "total_rows": self.num_rows,
            "n_videos": len(self.videos),
            "n_skipped": 0,
            "encoding": "webp",
            "quality": self.quality,
            "resize": None,
            "video_column": self.video_column,
            "videos": [video.to_dict() for video in self.videos],
        }
        for name, value in self.extra.items():
            meta.setdefault(name, value)
        meta["lossless"] = self.lossless
        if self.features is not None:
            meta[FEATURES_KEY] = dict(self.features)
        return meta
