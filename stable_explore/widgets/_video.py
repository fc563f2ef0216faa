"""Videos in the shard browser: posters as thumbnails, their numbers as columns, frames to scrub, a player.

A dataset with a ``Video`` column (and no image column) shows each row's poster frame as its
thumbnail, made once and kept in the thumbnail cache as image thumbnails are. Each video is probed
once per version (kept by :mod:`stable_explore.dataset.video_probes`, shared by every browser
and ``ds.clips`` of the version, and kept in the home for the next kernel): its duration, fps,
width, height and frames are then number columns named ``"<column>.duration"`` and so on,
which filter, sort and draw histograms like stored ones
(``browser.where("video.duration", max=2)``). A video that cannot be decoded is a broken-video
tile that says why; its numbers are missing (null), so no filter keeps it.

The page asks for the rest through the browser's requests (:mod:`._requests`): ``video_frames``
(a few evenly spaced frames of one row, for hover scrubbing and the detail pane's strip) and
``video_media`` (the file's bytes, for the detail pane's ``<video>``; never a ``file://`` URL).

Examples
--------
>>> from stable_explore.schema import Features, Value, Video
>>> video_kinds(Features(clip=Video(), n=Value("int64")))
{'clip.duration': 'number', 'clip.fps': 'number', 'clip.width': 'number', 'clip.height': 'number', \
'clip.frames': 'number'}
>>> derived_of("clip.fps", Features(clip=Video()))
('clip', 'fps')
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from stable_explore.dataset.video_probes import VideoProbes, video_probes
from stable_explore.display.video import (
    SCRUB_FRAMES,
    Poster,
    poster_thumbnail,
    scrub_frames,
    video_bytes,
    video_mime,
)
from stable_explore.errors import InvalidOptionError, RowIndexError, VideoDecodeError
from stable_explore.schema import Video
from stable_explore.schema.video import video_cell, video_source
from stable_explore.widgets._commands import COMMANDS
from stable_explore.widgets._images import pool
from stable_explore.widgets._members import BrowserMembers

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.schema import Features
    from stable_explore.schema.video_codec import VideoInfo
    from stable_explore.widgets._messages import BrokenVideo, PlayerVideo, VideoMarks
    from stable_explore.widgets._requests import Buffers, Reply, Request
    from stable_explore.widgets._state import Opened
    from stable_explore.widgets._thumbs import ThumbnailCache

__all__ = [
    "DERIVED",
    "PLAYER_MAX_BYTES",
    "VideoMixin",
    "derived_column",
    "derived_of",
    "derived_ready",
    "video_infos",
    "video_kinds",
    "video_text",
]

DERIVED = ("duration", "fps", "width", "height", "frames")
"""What each video's probe adds as a number column ``"<column>.<what>"``."""
PLAYER_MAX_BYTES = 256 * 1024 * 1024
"""The largest video file the detail pane's player is sent (a larger one shows as a strip of frames)."""
PROBE_ALL_ROWS = 1000
"""Up to this many videos, every one is probed just after the first page (their numbers' ranges and histograms);
a larger set probes its videos when a filter or sort first asks for one of their numbers (the kernel is busy
meanwhile: about 5-10 ms a video on 2 cores)."""
STRIP_FRAMES = 12
STRIP_PX = 256
_PARALLEL_FROM = 4
_READ_AT_ONCE = 32  # videos read from the shards at a time to probe them (embedded ones are their whole file)


def video_kinds(features: Features) -> dict[str, str]:
    """The number columns each ``Video`` column adds: ``{"<column>.duration": "number", ...}``."""
    return {
        f"{name}.{what}": "number"
        for name, feature in features.items()
        if isinstance(feature, Video)
        for what in DERIVED
        if f"{name}.{what}" not in features
    }


def derived_of(name: str, features: Features) -> tuple[str, str] | None:
    """``(video column, what)`` for a derived column's name, None for any other name."""
    column, _, what = name.rpartition(".")
    if what in DERIVED and isinstance(features.get(column), Video) and name not in features:
        return column, what
    return None


def derived_ready(opened: Opened, name: str) -> bool:
    """Whether the derived column ``name``'s range may be read now (after the first page).

    So for a set of at most :data:`PROBE_ALL_ROWS` videos, and for one whose numbers a filter or sort has
    already asked for (its probes are done).
    """
    return len(opened.ds) <= PROBE_ALL_ROWS or name in opened.value_columns


def _probes(ds: CachedDataset, column: str) -> VideoProbes:
    """The probes of ``column``'s videos in ``ds``'s version, shared with ``ds.clips`` and kept in the home."""
    return video_probes(ds, ds.stored_column(column))


def _probe_one(value: object) -> VideoInfo | str:
    from stable_explore.schema.video_codec import probe

    source = video_source(value)
    if source is None:
        return "no video in this cell"
    try:
        return probe(source)
    except Exception as exc:  # noqa: BLE001 - a broken video is a broken tile saying why, not a dead page
        return str(exc)


def video_infos(
    ds: CachedDataset, column: str, rows: np.ndarray, base: np.ndarray | None = None
) -> list[VideoInfo | str]:
    """Each row's probe (a :class:`~stable_explore.schema.video_codec.VideoInfo`, or why it failed), once a version.

    ``rows`` are positions in ``ds``; ``base`` their version rows, when the caller knows them.
    """
    base = ds.base_rows(rows) if base is None else base
    known = _probes(ds, column)
    wanted = base.tolist()
    infos = {i: info for i, info in enumerate(known.get(b) for b in wanted) if info is not None}
    missing = [i for i in range(len(wanted)) if i not in infos]
    for start in range(0, len(missing), _READ_AT_ONCE):  # embedded videos: a few in memory at a time, not all
        part = missing[start : start + _READ_AT_ONCE]
        values = ds.select(rows[part]).to_arrow(columns=[column]).column(0).to_pylist()
        if len(values) >= _PARALLEL_FROM:
            found = list(pool("decode").map(_probe_one, values))
        else:
            found = [_probe_one(v) for v in values]
        known.put((wanted[i], value, probe) for i, value, probe in zip(part, values, found, strict=True))
        infos.update(zip(part, found, strict=True))
    return [infos[i] for i in range(len(wanted))]


def derived_column(ds: CachedDataset, name: str) -> pa.Array:
    """The whole derived column ``name`` (``"<video column>.<what>"``): float64, null where the video is broken."""
    found = derived_of(name, ds.features)
    if found is None:
        msg = f"{name!r} is not a video's derived column; they are {sorted(video_kinds(ds.features))}"
        raise InvalidOptionError(msg)
    column, what = found
    infos = video_infos(ds, column, np.arange(len(ds), dtype=np.int64))
    values = [float(getattr(info, what)) if not isinstance(info, str) else None for info in infos]
    return pa.array(values, type=pa.float64())


def video_text(value: object, info: VideoInfo | str | None) -> str:
    """What the detail pane says of a video cell: where it is, and its probe (or why it is broken)."""
    video = video_cell(value)
    where = "None" if video is None else str(video)  # its path, or "<N bytes video>"
    if info is None:
        return where
    if isinstance(info, str):
        return f"{where} · broken: {info}"
    return (
        f"{where} · {info.duration:.2f} s · {info.fps:g} fps · {info.width} x {info.height} · "
        f"{info.frames:,} frames · {info.codec}"
    )


def _cell_marks(info: VideoInfo | str) -> VideoMarks:
    if isinstance(info, str):
        return {"broken": info}
    return {"video": {"duration": info.duration, "frames": info.frames, "fps": info.fps}}


def _poster(value: object, size: int) -> Poster | str:
    try:
        return poster_thumbnail(value, size)
    except Exception as exc:  # noqa: BLE001 - see _probe_one
        return str(exc)


class VideoMixin(BrowserMembers):
    """What the shard browser does with a ``Video`` column (see the module's docstring)."""

    def _video_thumbnails(
        self, opened: Opened, cache: ThumbnailCache, rows: np.ndarray, base: np.ndarray, size: int
    ) -> list[tuple[bytes, str] | None]:
        """Each row's poster thumbnail (None for a broken video), made once and kept in ``cache``; probed on the way."""
        ds, column = opened.ds, opened.video_column or ""
        version = ds.version
        keys = [(version, int(b), size) for b in base.tolist()]
        found = [cache.get(k) for k in keys]
        known = _probes(ds, column)
        missing = [i for i, item in enumerate(found) if item is None and not isinstance(known.get(keys[i][1]), str)]
        for start in range(0, len(missing), _READ_AT_ONCE):  # embedded videos: a few in memory at a time
            part = missing[start : start + _READ_AT_ONCE]
            values = ds.select(rows[part]).to_arrow(columns=[column]).column(0).to_pylist()
            sizes = [size] * len(values)
            if len(values) >= _PARALLEL_FROM:
                made = list(pool("decode").map(_poster, values, sizes))
            else:
                made = [_poster(v, size) for v in values]
            known.put(
                (keys[i][1], value, poster if isinstance(poster, str) else poster.info)
                for i, value, poster in zip(part, values, made, strict=True)
            )
            for i, poster in zip(part, made, strict=True):
                if isinstance(poster, str):
                    continue
                cache.put(keys[i], poster.data, poster.mime)
                found[i] = (poster.data, poster.mime)
        return found

    def video_marks(self, rows: np.ndarray) -> list[VideoMarks]:
        """What each row's tile says: ``{"video": {"duration", "frames", "fps"}}``, or ``{"broken": why}``."""
        opened = self._state.opened
        infos = video_infos(opened.ds, opened.video_column or "", rows, opened.base_of(rows))
        return [_cell_marks(info) for info in infos]

    def _video_row(self, row: int) -> tuple[object, VideoInfo | str]:
        """The stored cell of ``row``'s video, and its probe."""
        opened = self._state.opened
        ds, column = opened.ds, opened.video_column
        if column is None:
            msg = f"{ds.ref} has no Video column"
            raise InvalidOptionError(msg)
        if not 0 <= row < len(ds):
            msg = f"row {row} is out of range for {len(ds)} rows"
            raise RowIndexError(msg)
        rows = np.array([row], dtype=np.int64)
        value = ds.select(rows).to_arrow(columns=[column]).column(0)[0].as_py()
        return value, video_infos(ds, column, rows)[0]

    def _located(self, exc: VideoDecodeError, row: int) -> VideoDecodeError:
        opened = self._state.opened
        key = opened.ds.select([row]).keys()[0]
        return exc.located(field=opened.video_column, index=row, key=key)

    def video_frames(self, row: int, count: int = SCRUB_FRAMES, size: int | None = None) -> Reply:
        """``count`` evenly spaced frames of ``row``'s video (thumbnails of ``size`` px), as the page's reply.

        ``{"type": "video_frames", "row", "frames": [{"index", "mime", "buffer"}], "fps"}`` with one buffer a frame.

        Raises
        ------
        VideoDecodeError
            The video cannot be decoded (the message names the row, its key and the column).
        """
        value, info = self._video_row(int(row))
        if isinstance(info, str):
            raise self._located(VideoDecodeError(info), int(row))
        try:
            frames = scrub_frames(value, max(1, min(int(count), 64)), int(size or self.thumb_size), info)
        except VideoDecodeError as exc:
            raise self._located(exc, int(row)) from exc
        content = {
            "type": "video_frames",
            "row": int(row),
            "fps": info.fps,
            "frames": [{"index": index, "mime": mime, "buffer": n} for n, (index, (_, mime)) in enumerate(frames)],
        }
        return content, [data for _, (data, _) in frames]

    def video_media(self, row: int) -> Reply:
        """The file of ``row``'s video for the page's player: ``{"type": "video_media", "row", "mime"}`` and its bytes.

        Raises
        ------
        VideoDecodeError
            The video cannot be read, or is over :data:`PLAYER_MAX_BYTES` (the page shows the strip).
        """
        value, info = self._video_row(int(row))
        if isinstance(info, str):
            raise self._located(VideoDecodeError(info), int(row))
        try:
            data = video_bytes(value, max_bytes=PLAYER_MAX_BYTES)
        except VideoDecodeError as exc:
            raise self._located(exc, int(row)) from exc
        digest = hashlib.blake2b(data[:65536], digest_size=8).hexdigest()
        content = {"type": "video_media", "row": int(row), "mime": video_mime(info), "codec": info.codec, "id": digest}
        return content, [data]

    def video_detail(self, row: int) -> PlayerVideo | BrokenVideo | None:
        """What the detail message says of a video row (its ``video``): its probe for the player and the strip.

        None for a row without a video.
        """
        value, info = self._video_row(int(row))
        if value is None:
            return None
        if isinstance(info, str):
            return {"broken": info}
        return {
            "mime": video_mime(info),
            "codec": info.codec,
            "duration": info.duration,
            "frames": info.frames,
            "fps": info.fps,
            "width": info.width,
            "height": info.height,
        }


# drawing the page, not the user's next action: the status line stays as it is
COMMANDS.quiet = COMMANDS.quiet | {"video_frames", "video_media"}


@COMMANDS.command("video_frames")
def _video_frames(browser: VideoMixin, msg: Request, buffers: Buffers) -> Reply:
    """A few evenly spaced frames of one row's video: hover scrubbing, and the detail pane's strip."""
    reply: Reply = browser.video_frames(int(msg["row"]), int(msg.get("count") or SCRUB_FRAMES), msg.get("size"))
    return reply


@COMMANDS.command("video_media")
def _video_media(browser: VideoMixin, msg: Request, buffers: Buffers) -> Reply:
    """The file of one row's video, for the detail pane's player."""
    reply: Reply = browser.video_media(int(msg["row"]))
    return reply
