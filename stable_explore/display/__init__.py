"""Rendering helpers: the dataset and diff cards, listing tables, thumbnails, progress bars.

They take plain values or duck-typed objects and never open shard files; the
dataset and versions layers call them to render themselves. :func:`show` draws a
DataFrame with its images inline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stable_explore._lazy import lazy_exports

if TYPE_CHECKING:  # the names themselves, for type checkers; at run time each imports when first used
    from stable_explore.display.frame import FrameView, show

# imported when first used: a listing's table (``stable-explore ls``) needs neither numpy nor the thumbnails.
# Keep it the same as the imports above (tests/test_import_time.py checks).
_LAZY = {"FrameView": ".frame", "show": ".frame"}
if not TYPE_CHECKING:  # hidden from type checkers: to them a name not imported above is a typo
    __getattr__, __dir__ = lazy_exports(
        __name__,
        _LAZY,
        (
            "card",
            "frame",
            "html_progress",
            "images",
            "progress",
            "table",
            "video",
        ),  # its public modules, reached as attributes as when this imported them
    )

__all__ = ["FrameView", "show"]
