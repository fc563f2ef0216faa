"""``VideoFile``: what a ``Video`` cell reads back as; nothing is decoded until frames are asked for.

Named for what it is to a user (one video file, wherever its bytes are) rather than for the
column type; ``ds[i]["video"]`` can be kept, pickled and sent to a DataLoader worker cheaply
(its bytes or path only; the probe is redone where needed).

Examples
--------
>>> from stable_explore.testing.videos import frame_index, indexed_video
>>> video = VideoFile(bytes=indexed_video(12))
>>> len(video), video.info.width, [frame_index(f) for f in video[3:6]]
(12, 64, [3, 4, 5])
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import InvalidOptionError, RowIndexError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from stable_explore.schema.video_codec import VideoInfo

__all__ = ["INLINE_LIMIT", "VideoFile", "video_mime_type"]

INLINE_LIMIT = 8 * 1024 * 1024
"""Videos up to this many bytes play from a data URL in a notebook; bigger ones play from their path."""


def video_mime_type(data: bytes) -> str:
    r"""The MIME type a browser plays ``data`` as, from its first bytes (``video/mp4`` when unsure).

    Examples
    --------
    >>> video_mime_type(b"\x1aE\xdf\xa3..."), video_mime_type(b"\x00\x00\x00\x18ftypisom")
    ('video/webm', 'video/mp4')
    """
    if data[:4] == b"\x1a\x45\xdf\xa3":
        return "video/webm"
    if data[:4] == b"OggS":
        return "video/ogg"
    return "video/mp4"


class VideoFile:
    """One video, by its encoded bytes or its file's path: frames by index, a poster, a player.

    Parameters
    ----------
    path:
        The file's path (or, with bytes, the name it was stored under).
    bytes:
        The encoded file, when stored in the cache; decoding reads these, not the path.

    Examples
    --------
    >>> from stable_explore.testing.videos import indexed_video
    >>> video = VideoFile(bytes=indexed_video(5), path="five.mp4")
    >>> str(video), video.frames([0, 4]).shape
    ('five.mp4', (2, 48, 64, 3))
    """

    __slots__ = ("_info", "bytes", "path")

    def __init__(self, *, path: str | None = None, bytes: bytes | None = None) -> None:
        if path is None and bytes is None:
            msg = "a VideoFile needs a path or bytes, got neither"
            raise InvalidOptionError(msg)
        self.path = path
        self.bytes = bytes
        self._info: VideoInfo | None = None

    @property
    def source(self) -> str | bytes:
        """What the decoder reads: the bytes when there are, else the path."""
        if self.bytes is not None:
            return self.bytes
        assert self.path is not None
        return self.path

    @property
    def info(self) -> VideoInfo:
        """Frames, fps, duration, size and codec (probed once, then kept)."""
        if self._info is None:
            from stable_explore.schema.video_codec import probe

            self._info = probe(self.source)
        return self._info

    def __len__(self) -> int:
        return self.info.frames

    def __getitem__(self, index: int | slice) -> np.ndarray:
        """Frame ``index`` (H x W x 3, ``uint8``), or the frames of a slice (n x H x W x 3)."""
        count = len(self)
        if isinstance(index, slice):
            return self.frames(range(*index.indices(count)))
        position = int(index)
        if not -count <= position < count:
            msg = f"frame {position} is out of range: the video has {count} frames"
            raise RowIndexError(msg)  # an IndexError: a frame is to a video what a row is to a dataset
        frame: np.ndarray = self.frames([position % count])[0]
        return frame

    def frames(self, indices: Sequence[int]) -> np.ndarray:
        """The frames at ``indices`` (in that order) as one ``uint8`` array n x H x W x 3.

        Only the span the indices cover is decoded, from the key frame before it.
        """
        from stable_explore.schema.video_codec import read_frames

        wanted = [int(i) for i in indices]
        if not wanted:
            info = self.info
            return np.zeros((0, info.height, info.width, 3), np.uint8)
        return read_frames(self.source, wanted)

    def poster(self) -> np.ndarray:
        """One frame that stands for the video (a tenth of the way in), H x W x 3."""
        from stable_explore.schema.video_codec import poster_frame

        return poster_frame(self.source, self.info)

    def _playable_bytes(self) -> bytes | None:
        if self.bytes is not None:
            return self.bytes if len(self.bytes) <= INLINE_LIMIT else None
        assert self.path is not None
        try:
            if Path(self.path).stat().st_size <= INLINE_LIMIT:
                return Path(self.path).read_bytes()
        except OSError:
            return None
        return None

    def _repr_html_(self) -> str:
        """A ``<video>`` player: from a data URL of the bytes when small, else from the path."""
        data = self._playable_bytes()
        if data is not None:
            encoded = base64.b64encode(data).decode("ascii")
            src = f"data:{video_mime_type(data)};base64,{encoded}"
        elif self.path is not None:
            src = self.path
        else:
            size = len(self.bytes or b"")
            return f"<pre>{html.escape(repr(self))}</pre><p>(too big to play inline: {size} bytes)</p>"
        title = html.escape(self.path or f"{len(self.bytes or b'')} bytes of video", quote=True)
        attributes = f'title="{title}" src="{html.escape(src, quote=True)}" style="max-width:100%"'
        return f'<video controls muted loop preload="metadata" {attributes}></video>'

    def __str__(self) -> str:
        """The path, or ``<N bytes video>``: what a table shows for the cell."""
        return self.path if self.path is not None else f"<{len(self.bytes or b'')} bytes video>"

    def __repr__(self) -> str:
        stored = "None" if self.bytes is None else f"<{len(self.bytes)} bytes>"
        return f"VideoFile(path={self.path!r}, bytes={stored})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VideoFile):
            return NotImplemented
        return self.path == other.path and self.bytes == other.bytes

    def __hash__(self) -> int:
        return hash((self.path, self.bytes))

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.bytes = state["bytes"]
        self._info = None
