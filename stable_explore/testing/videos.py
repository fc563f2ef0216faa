"""Videos whose frames say which frame they are, for tests, examples and benchmarks.

Each frame carries its index as 16 bright or dark bars (two rows of eight, one bit each), big enough
to survive any codec's compression, so a test can check every frame a window returns.

Examples
--------
>>> from stable_explore.testing.videos import frame_index, indexed_frames, indexed_video
>>> from stable_explore.schema.video_codec import read_frames
>>> [frame_index(frame) for frame in indexed_frames(3, height=32, width=64)]
[0, 1, 2]
>>> data = indexed_video(20, codec="mpeg4", container="mp4")
>>> [frame_index(frame) for frame in read_frames(data, [19, 4, 5])]
[19, 4, 5]
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from stable_explore.schema.video_codec import encode_frames

__all__ = ["CODECS", "frame_index", "indexed_frames", "indexed_video", "write_indexed_video"]

_BITS = 16
_PER_ROW = 8

# (codec, container, file suffix) that PyAV's wheels encode on every platform
CODECS: tuple[tuple[str, str, str], ...] = (
    ("mpeg4", "mp4", ".mp4"),
    ("libx264", "mp4", ".mp4"),
    ("libvpx-vp9", "webm", ".webm"),
)


def indexed_frames(count: int, *, height: int = 48, width: int = 64, start: int = 0) -> np.ndarray:
    """``count`` RGB frames (``uint8``, n x H x W x 3) whose bars spell ``start``, ``start + 1``, ..."""
    frames = np.zeros((count, height, width, 3), np.uint8)
    bar_w, bar_h = width // _PER_ROW, height // 2
    for offset in range(count):
        value = start + offset
        for bit in range(_BITS):
            if value >> bit & 1:
                row, col = divmod(bit, _PER_ROW)
                frames[offset, row * bar_h : (row + 1) * bar_h, col * bar_w : (col + 1) * bar_w] = 255
        frames[offset, :, :, 2] = (value * 37) % 256  # blue varies too, so no two neighbours are alike
    return frames


def frame_index(frame: np.ndarray) -> int:
    """The index a frame of :func:`indexed_frames` carries, read back from its bars (red channel)."""
    height, width = frame.shape[:2]
    bar_w, bar_h = width // _PER_ROW, height // 2
    value = 0
    for bit in range(_BITS):
        row, col = divmod(bit, _PER_ROW)
        # the middle of the bar: codecs blur the edges
        top, left = row * bar_h + bar_h // 4, col * bar_w + bar_w // 4
        patch = frame[top : top + bar_h // 2, left : left + bar_w // 2, 0]
        if float(patch.mean()) > 127:
            value |= 1 << bit
    return value


def indexed_video(
    count: int,
    *,
    codec: str = "mpeg4",
    container: str = "mp4",
    fps: int | Fraction = 24,
    height: int = 48,
    width: int = 64,
    start: int = 0,
) -> bytes:
    """The bytes of a video of ``count`` indexed frames."""
    return encode_frames(
        indexed_frames(count, height=height, width=width, start=start), fps=fps, codec=codec, container=container
    )


def write_indexed_video(path: str | Path, count: int, **options: object) -> Path:
    """Write :func:`indexed_video` to ``path`` (codec and container from ``options``) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(indexed_video(count, **options))  # type: ignore[arg-type]
    return target
