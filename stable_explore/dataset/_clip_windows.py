"""Which frames make each window of a set of videos: stable-datasets' rule, kept as plain arrays.

A window of ``window_length`` frames takes every ``frame_skip + 1``-th frame, so it spans
``(window_length - 1) * (frame_skip + 1) + 1`` frames; windows start every ``hop_size`` frames
from frame 0, and a video of ``T`` frames gives ``(T - span) // hop_size + 1`` of them. A video
shorter than the span, or than ``min_video_frames``, gives none.

Examples
--------
>>> plan = plan_windows([10, 3, 7], window_length=3, frame_skip=1, hop_size=2)
>>> plan.span, plan.per_video.tolist()
(5, [3, 0, 2])
>>> [(int(v), int(s)) for v, s in zip(plan.video, plan.start)]
[(0, 0), (0, 2), (0, 4), (2, 0), (2, 2)]
>>> plan.frame_indices(4).tolist()
[2, 4, 6]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stable_explore.errors import InvalidOptionError

__all__ = ["WindowPlan", "plan_windows"]


@dataclass(frozen=True)
class WindowPlan:
    """Windows over videos: window ``i`` is video ``video[i]`` from frame ``start[i]``.

    Attributes
    ----------
    video:
        For each window, the position of its video in the list the plan was made from (``int64``).
    start:
        For each window, the index of its first frame (``int64``).
    per_video:
        How many windows each video gives.
    window_length, frame_skip, hop_size:
        The parameters the plan was made with.
    """

    video: np.ndarray
    start: np.ndarray
    per_video: np.ndarray
    window_length: int
    frame_skip: int
    hop_size: int

    @property
    def stride(self) -> int:
        """Frames from one frame of a window to the next."""
        return self.frame_skip + 1

    @property
    def span(self) -> int:
        """Frames from a window's first frame to its last, both included."""
        return (self.window_length - 1) * self.stride + 1

    def __len__(self) -> int:
        return int(self.video.shape[0])

    def frame_indices(self, window: int) -> np.ndarray:
        """The frame indices of window ``window`` in its video."""
        return int(self.start[window]) + self.stride * np.arange(self.window_length, dtype=np.int64)


def _whole(name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < least:
        msg = f"{name} must be a whole number >= {least}, got {value!r}"
        raise InvalidOptionError(msg)
    return int(value)


def plan_windows(
    frame_counts: Sequence[int] | np.ndarray,
    *,
    window_length: int,
    frame_skip: int = 0,
    hop_size: int = 1,
    min_video_frames: int | None = None,
) -> WindowPlan:
    """Plan the windows of videos with ``frame_counts`` frames each (see the module's rule)."""
    length = _whole("window_length", window_length, 1)
    skip = _whole("frame_skip", frame_skip, 0)
    hop = _whole("hop_size", hop_size, 1)
    span = (length - 1) * (skip + 1) + 1
    least = span if min_video_frames is None else max(span, _whole("min_video_frames", min_video_frames, 0))
    counts = np.asarray(frame_counts, dtype=np.int64).reshape(-1)
    per_video = np.where(counts >= least, (counts - span) // hop + 1, 0).astype(np.int64)
    video = np.repeat(np.arange(counts.shape[0], dtype=np.int64), per_video)
    # each window's rank within its video, times the hop
    firsts = np.cumsum(per_video) - per_video
    start = (np.arange(video.shape[0], dtype=np.int64) - np.repeat(firsts, per_video)) * hop
    return WindowPlan(
        video=video, start=start, per_video=per_video, window_length=length, frame_skip=skip, hop_size=hop
    )
