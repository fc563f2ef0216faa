"""Rendering helpers: the dataset and diff cards, listing tables, thumbnails, progress bars.

They take plain values or duck-typed objects and never open shard files; the
dataset and versions layers call them to render themselves. :func:`show` draws a
DataFrame with its images inline.
"""

from stable_explore.display.frame import FrameView, show

__all__ = ["FrameView", "show"]
