"""Where a video's decoding stopped, kept for its next window: windows taken in order decode each frame once.

A window of a ``Video`` column used to open its video and decode from the key frame before its first
frame: consecutive windows of a video with long groups of pictures decoded the same frames again and
again (window ``k`` of an H.264 clip with one key frame decoded ``k * hop`` frames it did not keep).
A :class:`FrameCursor` keeps the last ``span`` frames a window of its video decoded, and keeps the
decoder open where it stopped while the video's windows come in order (the next one overlapping or
touching the last, or another of the same batch); the next window at or after the last one's start
then only decodes its new frames. A window behind the kept frames, or past them, starts a new
decoder (a seek), and a window that does not follow the last closes its decoder once served and
lets go of the decoded frames it did not make RGB: decoded frames kept for a window that never comes
held their decoders' buffers and made the decoding of every other video about twice as slow
(shuffled batches of 8 over 32 H.264 videos: 56-65 -> 22-34 windows/s in one process), so shuffled
windows each decode their own span and close, as they did before decoders were kept.

A process keeps at most :data:`_CURSORS` cursors (each ``span`` frames, and an open decoder while
in order), the least recently used closed first: the windows a DataLoader worker reads in order
(``to_iterable`` deals each video's windows to one worker) or in sorted batches use them.
:func:`open_decoders` counts the decoders left open and the decoded frames held (for tests and benchmarks).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

__all__ = ["FrameCursor", "cursor_for", "open_decoders"]

_CURSORS = 4  # open decoders a process keeps


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
        self._last_first: int | None = None  # the first frame of the last window served

    def window(self, indices: np.ndarray, *, more: bool = False) -> np.ndarray:
        """The frames at ``indices`` (increasing) as one T x H x W x 3 array.

        ``more``: another window of this video comes next (a sorted batch), so the decoder stays open.
        """
        first, last = int(indices[0]), int(indices[-1])
        oldest = self._kept[0][0] if self._kept else self._next
        held = {index for index, _ in self._kept}
        follows = self._last_first is not None and self._last_first < first <= self._next
        # a video's first window read first: likely the start of its windows in order
        starts = self._last_first is None and first == int(self._needed[0])
        self._last_first = first
        missing = any(int(i) not in held for i in indices.tolist() if int(i) < self._next)
        if first < oldest or first > self._next or missing:
            self._kept.clear()  # none of the kept frames is wanted: seek to the window
            self._next = first
            self.close()
        if self._decoder is None:
            self._restart(self._next)  # on from the kept frames (a window overlapping the last one's), or a seek
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
        if not (more or follows or starts):
            self.close()  # windows out of order: an idle open decoder, or its frames, slow the others' decoding
        return np.stack(out)

    @property
    def is_open(self) -> bool:
        """Whether the decoder is open (kept for a window in order)."""
        return self._decoder is not None

    def _restart(self, first: int) -> None:
        from stable_explore.schema.video_codec import decoded_frames

        self.close()
        # the frames windows take from here to the end: the generator decodes only as far as it is advanced
        self._decoder = decoded_frames(self._source, self._needed[np.searchsorted(self._needed, first) :].tolist())
        self._next = first

    def close(self) -> None:
        """Close the decoder (its video file) and let go of its frames not made RGB.

        A decoded frame holds on to its decoder's buffers: frames kept from closed decoders made
        every new decoder allocate afresh, and decoding and RGB conversion about twice as slow.
        """
        if self._decoder is not None:
            close = getattr(self._decoder, "close", None)
            if close is not None:
                close()
            self._decoder = None
        kept = [(index, [None, entry[1]]) for index, entry in self._kept if entry[1] is not None]
        self._kept.clear()
        self._kept.extend(kept)

    @property
    def held_frames(self) -> int:
        """How many decoded frames (not RGB arrays) the cursor holds."""
        return sum(entry[0] is not None for _, entry in self._kept)


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


def open_decoders() -> tuple[int, int]:
    """How many video decoders this process keeps open, and how many decoded frames its cursors hold.

    Examples
    --------
    >>> decoders, frames = open_decoders()
    >>> decoders <= _CURSORS
    True
    """
    with _open_lock:
        cursors = list(_open.values())
    return sum(cursor.is_open for cursor in cursors), sum(cursor.held_frames for cursor in cursors)
