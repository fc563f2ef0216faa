"""Video files in and out of numpy with PyAV (FFmpeg inside its wheels): probe, frames by index, a poster.

Every function takes the video as a path, as bytes (``bytes``/``memoryview``) or as a binary file
object, and never holds more decoded frames than it returns: to reach frame ``i`` it seeks to the
key frame before ``i`` and decodes forward from there, dropping what it does not need.

Frame ``i`` is the ``i``-th frame in presentation order, counted from 0. Its place is found from
its presentation time and the stream's average rate, so it is exact for constant frame rate
videos (what cameras and encoders write by default); for a stream without timestamps the frames
are counted from the start instead.

A file that is not a video, or one cut short, raises :class:`~stable_explore.errors.VideoDecodeError`
(never hangs, never returns fewer frames than asked).

Examples
--------
>>> import tempfile, numpy as np
>>> from stable_explore.schema.video_codec import encode_frames, probe, read_frames
>>> frames = np.zeros((12, 32, 48, 3), np.uint8)
>>> frames[:, :, :, 0] = np.arange(12)[:, None, None] * 20  # red grows frame by frame
>>> data = encode_frames(frames, fps=24, codec="mpeg4", container="mp4")
>>> info = probe(data)
>>> info.frames, info.width, info.height, round(info.fps)
(12, 48, 32, 24)
>>> picked = read_frames(data, [3, 7])
>>> picked.shape, [int(round(float(frame[..., 0].mean()) / 20)) for frame in picked]
((2, 32, 48, 3), [3, 7])
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from stable_explore._optional import require
from stable_explore.errors import InvalidOptionError, VideoDecodeError

if TYPE_CHECKING:
    import av.container

__all__ = [
    "VideoInfo",
    "VideoSource",
    "decoded_frames",
    "encode_frames",
    "frame_rgb",
    "iter_frames",
    "poster_frame",
    "probe",
    "read_frames",
    "scan_frames",
    "source_label",
]

VideoSource = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]

_PURPOSE = "Decoding videos"
_POSTER_FRACTION = 0.1  # the poster is taken a tenth of the way in: past fades from black and title cards


@dataclass(frozen=True)
class VideoInfo:
    """What a video's first video stream says about itself.

    Attributes
    ----------
    frames:
        The number of frames (from the container, or counted from its packets when it does not say).
    fps:
        Average frames per second.
    duration:
        Seconds (``frames / fps`` when the container does not say).
    width, height:
        Frame size in pixels.
    codec:
        FFmpeg's name of the codec (``"h264"``, ``"mpeg4"``, ``"vp9"``...).
    container:
        FFmpeg's name of the container format (``"mov,mp4,m4a,3gp,3g2,mj2"``, ``"matroska,webm"``...).
    """

    frames: int
    fps: float
    duration: float
    width: int
    height: int
    codec: str
    container: str

    def to_dict(self) -> dict[str, object]:
        """The fields as a plain dict (JSON-ready)."""
        return {
            "frames": self.frames,
            "fps": self.fps,
            "duration": self.duration,
            "width": self.width,
            "height": self.height,
            "codec": self.codec,
            "container": self.container,
        }


def source_label(source: VideoSource) -> str:
    """A short name of a video source for messages: its path, or how many bytes it has."""
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return f"<{len(source)} bytes of video>"
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, str) else "<video file object>"


@contextmanager
def _opened(source: VideoSource) -> Iterator[av.container.InputContainer]:
    av = require("av", "video", _PURPOSE)
    if isinstance(source, (bytes, bytearray, memoryview)):
        handle: object = io.BytesIO(bytes(source))
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            msg = f"no video file at {path}"
            raise VideoDecodeError(msg, source=str(path))
        handle = str(path)
    else:
        handle = source
        if hasattr(source, "seek"):
            source.seek(0)
    try:
        container = av.open(handle, mode="r")
    except (av.FFmpegError, OSError, ValueError) as exc:
        msg = f"not a video FFmpeg can open ({exc})"
        raise VideoDecodeError(msg, source=source_label(source)) from exc
    try:
        if not container.streams.video:
            msg = "the file has no video stream"
            raise VideoDecodeError(msg, source=source_label(source))
        yield container
    finally:
        container.close()


def _rate(stream: Any) -> Fraction:
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if rate:
            return Fraction(rate)
    return Fraction(0)


def probe(source: VideoSource) -> VideoInfo:
    """Frame count, rate, duration, size and codec of a video, reading headers (and packets if need be).

    Examples
    --------
    >>> import numpy as np
    >>> from stable_explore.schema.video_codec import encode_frames, probe
    >>> probe(encode_frames(np.zeros((5, 16, 16, 3), np.uint8), fps=10)).duration
    0.5
    """
    with _opened(source) as container:
        stream = container.streams.video[0]
        rate = _rate(stream)
        frames = int(stream.frames or 0)
        if frames <= 0:
            frames = _count_packets(container, stream, source)
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        else:
            duration = 0.0
        if rate and frames:
            duration = frames / float(rate)  # the frames' own span; containers pad or round theirs
        return VideoInfo(
            frames=frames,
            fps=float(rate),
            duration=round(duration, 6),
            width=int(stream.codec_context.width),
            height=int(stream.codec_context.height),
            codec=str(stream.codec_context.name),
            container=str(container.format.name),
        )


def _count_packets(container: Any, stream: Any, source: VideoSource) -> int:
    av = require("av", "video", _PURPOSE)
    count = 0
    try:
        for packet in container.demux(stream):
            if packet.size:
                count += 1
    except av.FFmpegError as exc:
        msg = f"the video breaks off after {count} frames ({exc})"
        raise VideoDecodeError(msg, source=source_label(source)) from exc
    container.seek(0)
    return count


def _frame_index(frame: Any, start_pts: int, time_base: Fraction, rate: Fraction) -> int | None:
    if frame.pts is None or not rate:
        return None
    return int(round((frame.pts - start_pts) * time_base * rate))  # noqa: RUF046 (pts is typed Any)


_ONE_THREAD: dict[str, int] = {"threads": 1}
"""The scaler's option for one thread, emptied when this PyAV's scaler has no ``threads`` option (an older one)."""


def _converted(frame: Any, **options: Any) -> np.ndarray:
    """``frame`` converted by FFmpeg's scaler (``format``, and ``width``/``height`` when given) as ``uint8``.

    On one thread: PyAV's scaler (``frame.to_ndarray(format=...)``) starts a pool of threads for every
    frame by default, which cost 1-4 ms a frame, 30-100 times the conversion of a 64 x 64 frame on
    one thread (a 720p frame: 2.1 ms, 0.4 ms on one thread).
    """
    try:
        return np.asarray(frame.to_ndarray(**options, **_ONE_THREAD), dtype=np.uint8)
    except TypeError as exc:
        if not _ONE_THREAD or "threads" not in str(exc):
            raise
        _ONE_THREAD.clear()  # an older PyAV: no threads option (and a scaler on one thread)
        return np.asarray(frame.to_ndarray(**options), dtype=np.uint8)


def _rgb(frame: Any) -> np.ndarray:
    return _converted(frame, format="rgb24")


def iter_frames(source: VideoSource, indices: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(index, frame)`` for each wanted frame index in increasing order (RGB, ``uint8``, H x W x 3).

    As :func:`decoded_frames`, each frame made RGB as it comes.
    """
    for index, frame in decoded_frames(source, indices):
        yield index, frame_rgb(frame)


def frame_rgb(frame: Any) -> np.ndarray:
    """A decoded frame (from :func:`decoded_frames`) as RGB ``uint8`` H x W x 3.

    Examples
    --------
    >>> import numpy as np
    >>> data = encode_frames(np.zeros((4, 16, 16, 3), np.uint8), fps=4)
    >>> [(index, frame_rgb(frame).shape) for index, frame in decoded_frames(data, [1, 3])]
    [(1, (16, 16, 3)), (3, (16, 16, 3))]
    """
    return _rgb(frame)


def decoded_frames(source: VideoSource, indices: Sequence[int]) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, decoded frame)`` for each wanted frame index in increasing order (PyAV frames, not RGB yet).

    Decoding starts at the key frame before the first wanted index and stops after the last, so a
    window of a long video costs about one group of pictures, not the video.

    Raises
    ------
    VideoDecodeError
        The video cannot be opened, breaks off, or ends before an index that was asked for.
    """
    wanted = sorted({int(i) for i in indices})
    if not wanted:
        return
    if wanted[0] < 0:
        msg = f"frame index {wanted[0]} is negative"
        raise VideoDecodeError(msg, source=source_label(source))
    av = require("av", "video", _PURPOSE)
    with _opened(source) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        rate = _rate(stream)
        time_base = Fraction(stream.time_base) if stream.time_base else Fraction(0)
        start_pts = int(stream.start_time or 0)
        timed = bool(rate and time_base)
        if timed and wanted[0] > 0:
            target = start_pts + math.floor(wanted[0] / (rate * time_base))
            try:
                container.seek(target, stream=stream, backward=True, any_frame=False)
            except av.FFmpegError:
                container.seek(0)
        pending = iter(wanted)
        want = next(pending)
        counted = -1
        last_seen = -1
        try:
            for frame in container.decode(stream):
                counted += 1
                index = _frame_index(frame, start_pts, time_base, rate) if timed else counted
                if index is None:
                    timed = False
                    yield from _restart_counting(source, wanted)
                    return
                if index > want and last_seen < 0 and counted == 0 and want > 0:
                    # The seek landed after the frame we want (some containers index coarsely): count instead.
                    yield from _restart_counting(source, wanted)
                    return
                last_seen = index
                while index >= want:
                    if index == want:
                        yield want, frame
                    else:
                        msg = f"frame {want} is missing from the stream (it jumps to frame {index})"
                        raise VideoDecodeError(msg, source=source_label(source))
                    want = next(pending, -1)
                    if want < 0:
                        return
        except av.FFmpegError as exc:
            msg = f"the video breaks off near frame {max(last_seen, 0)} ({exc})"
            raise VideoDecodeError(msg, source=source_label(source)) from exc
        msg = f"the video has {last_seen + 1} frames; frame {want} was asked for"
        raise VideoDecodeError(msg, source=source_label(source))


def _restart_counting(source: VideoSource, wanted: list[int]) -> Iterator[tuple[int, Any]]:
    """Frames by counting from the first, for streams whose timestamps cannot place them."""
    av = require("av", "video", _PURPOSE)
    with _opened(source) as container:
        stream = container.streams.video[0]
        pending = iter(wanted)
        want = next(pending)
        index = -1
        try:
            for index, frame in enumerate(container.decode(stream)):
                if index == want:
                    yield want, frame
                    want = next(pending, -1)
                    if want < 0:
                        return
        except av.FFmpegError as exc:
            msg = f"the video breaks off near frame {max(index, 0)} ({exc})"
            raise VideoDecodeError(msg, source=source_label(source)) from exc
        msg = f"the video has {index + 1} frames; frame {want} was asked for"
        raise VideoDecodeError(msg, source=source_label(source))


def read_frames(source: VideoSource, indices: Sequence[int]) -> np.ndarray:
    """The frames at ``indices`` (in the order given, repeats allowed) as one ``uint8`` array n x H x W x 3.

    Examples
    --------
    >>> import numpy as np
    >>> from stable_explore.schema.video_codec import encode_frames, read_frames
    >>> data = encode_frames(np.zeros((8, 16, 16, 3), np.uint8), fps=8)
    >>> read_frames(data, [6, 2, 6]).shape
    (3, 16, 16, 3)
    """
    picked = dict(iter_frames(source, indices))
    if not indices:
        return np.zeros((0, 0, 0, 3), np.uint8)
    return np.stack([picked[int(i)] for i in indices])


def poster_frame(source: VideoSource, info: VideoInfo | None = None) -> np.ndarray:
    """One frame that stands for the video: a tenth of the way in (the first frame of a short clip)."""
    info = info if info is not None else probe(source)
    index = min(int(info.frames * _POSTER_FRACTION), max(info.frames - 1, 0))
    frame: np.ndarray = read_frames(source, [index])[0]
    return frame


def encode_frames(
    frames: np.ndarray | Sequence[np.ndarray],
    *,
    fps: int | Fraction = 24,
    codec: str = "mpeg4",
    container: str = "mp4",
    quality: int | None = None,
) -> bytes:
    """Encode RGB frames (n x H x W x 3, ``uint8``) as a video file's bytes (tests, examples, exports).

    ``codec`` is FFmpeg's encoder name (``"mpeg4"``, ``"libx264"``, ``"libvpx-vp9"``...), ``container``
    its format name (``"mp4"``, ``"webm"``, ``"matroska"``...). ``quality`` sets the codec's
    constant-quality level where it has one (lower is better); by default close to lossless so
    that a frame's content survives for tests.
    """
    av = require("av", "video", "Encoding videos")
    stack = [np.ascontiguousarray(frame, dtype=np.uint8) for frame in frames]
    if not stack:
        msg = "no frames to encode"
        raise InvalidOptionError(msg)
    height, width = stack[0].shape[:2]
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container) as output:
        stream = output.add_stream(codec, rate=Fraction(fps))
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        stream.options = _quality_options(codec, quality)
        for array in stack:
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                output.mux(packet)
        for packet in stream.encode():
            output.mux(packet)
    return buffer.getvalue()


def _quality_options(codec: str, quality: int | None) -> dict[str, str]:
    if codec in ("libx264", "libx265"):
        return {"crf": str(18 if quality is None else quality), "preset": "veryfast"}
    if codec.startswith("libvpx"):
        return {"crf": str(10 if quality is None else quality), "b": "0", "deadline": "realtime", "cpu-used": "8"}
    if codec == "mpeg4":
        return {"qscale": str(2 if quality is None else quality)}
    return {}


def scan_frames(source: VideoSource, *, width: int = 64, grey: bool = True) -> Iterator[np.ndarray]:
    """Every frame in order, scaled to ``width`` pixels wide (grey ``uint8`` H x W, or RGB H x W x 3).

    For statistics over a whole video (black or frozen stretches): FFmpeg's scaler shrinks each frame
    as it is decoded, so a long high-resolution video costs a few kilobytes a frame.

    Raises
    ------
    VideoDecodeError
        The video cannot be opened or breaks off.
    """
    av = require("av", "video", _PURPOSE)
    with _opened(source) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        src_w, src_h = int(stream.codec_context.width), int(stream.codec_context.height)
        height = max(2, round(src_h * width / max(src_w, 1)) // 2 * 2)
        pixel_format = "gray" if grey else "rgb24"
        index = -1
        try:
            for index, frame in enumerate(container.decode(stream)):  # noqa: B007 (read after the loop)
                yield _converted(frame, format=pixel_format, width=width, height=height)
        except av.FFmpegError as exc:
            msg = f"the video breaks off near frame {max(index, 0)} ({exc})"
            raise VideoDecodeError(msg, source=source_label(source)) from exc
