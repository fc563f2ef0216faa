"""Where a video's decoding stopped, kept for its next window: windows taken in order decode each frame once.

A window of a ``Video`` column used to open its video and decode from the key frame before its first
frame: consecutive windows of a video with long groups of pictures decoded the same frames again and
again (window ``k`` of an H.264 clip with one key frame decoded ``k * hop`` frames it did not keep).
A :class:`FrameCursor` keeps the decoder open where it stopped and the last ``span`` frames it gave,
so the next window at or after the last one's start only decodes its new frames. A window behind
the kept frames, or far ahead (more than :data:`_AHEAD` spans), starts a new decoder (a seek).

A process keeps at most :data:`_CURSORS` cursors (each an open decoder and ``span`` frames), the
least recently used closed first: the windows a DataLoader worker reads in order (``to_iterable``
deals each video's windows to one worker) or in sorted batches use them; shuffled windows of many
videos mostly start a new decoder each, as before.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

__all__ = ["FrameCursor", "cursor_for"]

_CURSORS = 4  # open decoders a process keeps
_AHEAD = 4  # a window more than this many spans past the decoder's position seeks instead of decoding up to it


class FrameCursor:
    """One video's decoder, left where it stopped, and the last ``span`` frames it decoded."""

    def __init__(self, source: Any, needed: np.ndarray, span: int) -> None:
        self._source = source
        self._needed = needed  # every frame some window of the video takes, increasing
        self._span = span
        self._kept: deque[tuple[int, list[Any]]] = deque(maxlen=span)  # index, [decoded frame, its RGB or None]
        self._decoder: Iterator[tuple[int, Any]] | None = None
        self._next = 0  # the frame the decoder gives next
        self.lock = threading.Lock()
        self.decoded = 0  # frames decoded so far (for tests and benchmarks)

    def window(self, indices: np.ndarray) -> np.ndarray:
        """The frames at ``indices`` (increasing) as one T x H x W x 3 array."""
        first, last = int(indices[0]), int(indices[-1])
        oldest = self._kept[0][0] if self._kept else self._next
        if self._decoder is None or first < oldest or first > self._next + _AHEAD * self._span:
            self._restart(first)
        assert self._decoder is not None
        try:
            while self._next <= last:
                index, frame = next(self._decoder)
                self._kept.append((index, [frame, None]))
                self._next = index + 1
                self.decoded += 1
        except BaseException:
            self.close()  # a broken video (or an interrupt) leaves no half-read decoder behind
            raise
        from stable_explore.schema.video_codec import frame_rgb

        by_index = dict(self._kept)
        out = []
        for i in indices.tolist():
            entry = by_index[int(i)]
            if entry[1] is None:  # made RGB once, and only when a window takes it
                entry[1] = frame_rgb(entry[0])
            out.append(entry[1])
        return np.stack(out)

    def _restart(self, first: int) -> None:
        from stable_explore.schema.video_codec import decoded_frames

        self.close()
        # the frames windows take from here to the end: the generator decodes only as far as it is advanced
        self._decoder = decoded_frames(self._source, self._needed[np.searchsorted(self._needed, first) :].tolist())
        self._kept.clear()
        self._next = first

    def close(self) -> None:
        """Close the decoder (its video file)."""
        if self._decoder is not None:
            close = getattr(self._decoder, "close", None)
            if close is not None:
                close()
            self._decoder = None


_open: OrderedDict[Hashable, FrameCursor] = OrderedDict()
_open_lock = threading.Lock()
_orphans: list[FrameCursor] = []  # a forked child's copies of its parent's cursors: never touched, never closed


def _after_fork_in_child() -> None:
    """A forked process (a DataLoader worker) starts with no cursors.

    Its parent's decoders ran FFmpeg threads that do not exist in the child: using or even closing
    one there can hang, so they are set aside untouched, and the locks made anew.
    """
    global _open_lock
    _orphans.extend(_open.values())
    _open.clear()
    _open_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def cursor_for(key: Hashable, make: Callable[[], FrameCursor]) -> FrameCursor:
    """The cursor kept for ``key`` (video and window rule), or ``make()``'s; the least recently used is closed."""
    with _open_lock:
        cursor = _open.pop(key, None)
        if cursor is None:
            cursor = make()
        _open[key] = cursor
        while len(_open) > _CURSORS:
            _, old = _open.popitem(last=False)
            with old.lock:
                old.close()
        return cursor
