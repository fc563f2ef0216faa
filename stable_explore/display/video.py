"""What a video cell looks like: its poster as a thumbnail, a few frames to scrub, its file for a player.

A ``Video`` cell is the file's path or its bytes (``struct<bytes, path>``); every function here
takes the stored cell as :func:`~stable_explore.schema.video.video_source` reads it, decodes with PyAV
(:mod:`stable_explore.schema.video_codec`) and never holds more than the frames it returns. A video
that cannot be decoded raises :class:`~stable_explore.errors.VideoDecodeError`; the browser and the
card show it as a broken-video tile with the message, never a dead page.

Examples
--------
>>> from stable_explore.testing.videos import indexed_video
>>> cell = {"bytes": indexed_video(24, codec="mpeg4", container="mp4"), "path": None}  # as a Video column stores it
>>> poster = poster_thumbnail(cell, 64)
>>> poster.mime, poster.info.frames, poster.info.duration
('image/jpeg', 24, 1.0)
>>> [index for index, _ in scrub_frames(cell, 4, 32, poster.info)]
[0, 6, 12, 18]
>>> video_mime(poster.info)
'video/mp4'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.display.images import array_thumbnail, data_uri, encode_thumbnail
from stable_explore.errors import VideoDecodeError
from stable_explore.schema.video import video_source

if TYPE_CHECKING:
    from stable_explore.schema.video_codec import VideoInfo

__all__ = [
    "SCRUB_FRAMES",
    "Poster",
    "poster_html",
    "poster_thumbnail",
    "scrub_frames",
    "scrub_indices",
    "video_bytes",
    "video_mime",
]

SCRUB_FRAMES = 8
"""How many frames, evenly spaced, a video's tile scrubs through under the mouse."""

_MIMES = {"webm": "video/webm", "matroska": "video/x-matroska", "mp4": "video/mp4", "mov": "video/quicktime",
          "ogg": "video/ogg", "avi": "video/x-msvideo"}  # fmt: skip


@dataclass(frozen=True)
class Poster:
    """A video's poster thumbnail (encoded bytes and MIME type) and what its probe said."""

    data: bytes
    mime: str
    info: VideoInfo


def _needed(value: object) -> str | bytes:
    source = video_source(value)
    if source is None:
        msg = "the cell holds no video (None)"
        raise VideoDecodeError(msg)
    return source


def poster_thumbnail(value: object, size: int, *, quality: int = 80) -> Poster:
    """The poster frame of a stored video cell, shrunk to fit ``size`` px and encoded, with its probe.

    Raises
    ------
    VideoDecodeError
        The cell is empty, or its video cannot be opened or decoded.
    """
    from stable_explore.schema.video_codec import poster_frame, probe

    source = _needed(value)
    info = probe(source)
    frame = poster_frame(source, info)
    data, mime = encode_thumbnail(array_thumbnail(frame, size), quality=quality)
    return Poster(data, mime, info)


def scrub_indices(frames: int, count: int = SCRUB_FRAMES) -> list[int]:
    """``count`` frame indices evenly spaced over ``frames`` frames (each once, from the first).

    Examples
    --------
    >>> scrub_indices(100, 4), scrub_indices(3, 8)
    ([0, 25, 50, 75], [0, 1, 2])
    """
    if frames <= 0:
        return []
    return sorted({min(frames - 1, (i * frames) // count) for i in range(count)})


def scrub_frames(
    value: object, count: int, size: int, info: VideoInfo | None = None, *, quality: int = 80
) -> list[tuple[int, tuple[bytes, str]]]:
    """``count`` evenly spaced frames of a video cell as ``(index, (thumbnail bytes, MIME))``, fitting ``size`` px."""
    from stable_explore.schema.video_codec import probe, read_frames

    source = _needed(value)
    info = info if info is not None else probe(source)
    indices = scrub_indices(info.frames, count)
    frames: Any = read_frames(source, indices) if indices else []
    return [
        (index, encode_thumbnail(array_thumbnail(frame, size), quality=quality))
        for index, frame in zip(indices, frames, strict=True)
    ]


def video_mime(info: VideoInfo) -> str:
    """The MIME type a browser's ``<video>`` is told, from FFmpeg's container name.

    FFmpeg names one demuxer for both Matroska and WebM (``"matroska,webm"``): VP8, VP9 and AV1 in
    it are WebM to a browser.
    """
    names = info.container.split(",")
    if "webm" in names and info.codec in ("vp8", "vp9", "av1"):
        return "video/webm"
    for name, mime in _MIMES.items():  # in the order of _MIMES: FFmpeg's "mov,mp4,..." is an mp4 to a browser
        if name in names:
            return mime
    return "application/octet-stream"


def video_bytes(value: object, *, max_bytes: int) -> bytes:
    """The file's bytes of a video cell (read from its path, or as embedded), for the page's player.

    Raises
    ------
    VideoDecodeError
        No file at the path, or a file larger than ``max_bytes`` (the player would hold it all).
    """
    source = _needed(value)
    if isinstance(source, bytes):
        data = source
    else:
        try:
            size = Path(source).stat().st_size
        except OSError as exc:
            msg = f"cannot read the video file ({exc})"
            raise VideoDecodeError(msg, source=str(source)) from exc
        if size > max_bytes:
            msg = f"the video is {size:,} bytes, over the player's {max_bytes:,}: shown as a strip of frames"
            raise VideoDecodeError(msg, source=str(source))
        data = Path(source).read_bytes()
    if len(data) > max_bytes:
        msg = f"the video is {len(data):,} bytes, over the player's {max_bytes:,}: shown as a strip of frames"
        raise VideoDecodeError(msg)
    return data


def poster_html(value: object, size: int, error_colour: str) -> str:
    """An ``<img>`` of a video cell's poster for static HTML (card, pandas), or a broken-video tile saying why."""
    import html

    try:
        poster = poster_thumbnail(value, size)
    except Exception as exc:  # noqa: BLE001 - one broken video must not break the card
        text = html.escape(str(exc), quote=True)
        return (
            f"<div title='{text}' data-testid='se-video-broken' style='color:{error_colour};width:{size}px;"
            f"font-size:11px'>broken video</div>"
        )
    seconds = f"{poster.info.duration:.1f} s"
    return (
        f"<span style='position:relative;display:inline-block'><img src='{data_uri(poster.data, poster.mime)}' "
        f"style='max-width:{size}px;max-height:{size}px' alt='' data-testid='se-video-poster'>"
        f"<span style='position:absolute;right:2px;bottom:2px;font-size:10px;background:rgba(0,0,0,.65);"
        f"color:#fff;padding:0 3px;border-radius:3px'>{seconds}</span></span>"
    )
