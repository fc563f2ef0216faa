"""The window plan against a plain-Python statement of stable-datasets' rule, on many random cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stable_explore.dataset._clip_windows import plan_windows
from stable_explore.errors import InvalidOptionError


def _by_hand(counts, window_length, frame_skip, hop_size, min_video_frames):
    span = (window_length - 1) * (frame_skip + 1) + 1
    least = max(span, min_video_frames or 0)
    windows = []
    for video, count in enumerate(counts):
        if count < least:
            continue
        for start in range(0, count - span + 1, hop_size):
            windows.append((video, [start + j * (frame_skip + 1) for j in range(window_length)]))
    return windows


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    counts=st.lists(st.integers(0, 40), max_size=8),
    window_length=st.integers(1, 6),
    frame_skip=st.integers(0, 3),
    hop_size=st.integers(1, 5),
    min_video_frames=st.none() | st.integers(0, 30),
)
def test_plan_matches_the_rule(counts, window_length, frame_skip, hop_size, min_video_frames) -> None:
    plan = plan_windows(
        counts, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size, min_video_frames=min_video_frames
    )
    got = [(int(plan.video[i]), plan.frame_indices(i).tolist()) for i in range(len(plan))]
    assert got == _by_hand(counts, window_length, frame_skip, hop_size, min_video_frames)
    span = (window_length - 1) * (frame_skip + 1) + 1
    for count, n in zip(counts, plan.per_video.tolist(), strict=True):
        least = max(span, min_video_frames or 0)
        assert n == ((count - span) // hop_size + 1 if count >= least else 0)


@pytest.mark.parametrize(
    ("option", "value"), [("window_length", 0), ("frame_skip", -1), ("hop_size", 0), ("window_length", 2.5)]
)
def test_bad_parameters_are_named(option: str, value: object) -> None:
    options = {"window_length": 2, option: value}
    with pytest.raises(InvalidOptionError, match=option):
        plan_windows([10], **options)  # type: ignore[arg-type]
