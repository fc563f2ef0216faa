"""pylance's "lance is not fork-safe" warning, left out for the forks that start DataLoader workers over our data.

pylance warns before every ``os.fork`` once it is imported. We import it only to read or write a
Lance folder (``se.load`` copies one into a cache of ours, ``ds.export`` writes one) and hold no
Lance dataset afterwards: our datasets, clip views and streams read our own Arrow shards, so their
DataLoader workers never touch Lance, and the warning there only alarms users. Any other fork (a
user's own pool, a DataLoader over something else, or over ``stable_explore.compat``'s datasets,
whose Lance backend keeps a Lance dataset open) keeps it.

Examples
--------
>>> quiet_lance_fork_warning()  # after importing lance: our DataLoader workers start without it
"""

from __future__ import annotations

import inspect
import os
import warnings
from pathlib import Path
from types import FrameType

__all__ = ["quiet_lance_fork_warning"]

_MESSAGE = "lance is not fork-safe"
_DATALOADER_FILE = str(Path("torch", "utils", "data", "dataloader.py"))
_quieted: list[warnings.catch_warnings] = []  # the filter held for the fork under way
_registered = False


def quiet_lance_fork_warning() -> None:
    """Leave out pylance's fork warning when a DataLoader starts workers over one of our datasets.

    Called right after ``lance`` is imported: fork hooks run before-hooks newest first, so this
    one runs before pylance's.
    """
    global _registered
    if _registered or not hasattr(os, "register_at_fork"):
        return
    _registered = True
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


def _before_fork() -> None:
    if not _forking_our_workers(inspect.currentframe()):
        return
    held = warnings.catch_warnings()
    held.__enter__()
    warnings.filterwarnings("ignore", message=_MESSAGE, category=UserWarning)  # only this message
    _quieted.append(held)


def _after_fork() -> None:
    while _quieted:
        _quieted.pop().__exit__(None, None, None)


def _forking_our_workers(frame: FrameType | None) -> bool:
    """Whether this fork starts the workers of a DataLoader whose dataset is one of ours."""
    while frame is not None:
        if frame.f_code.co_name == "__init__" and frame.f_code.co_filename.endswith(_DATALOADER_FILE):
            dataset = getattr(frame.f_locals.get("self"), "_dataset", None)
            if dataset is not None:
                module = type(dataset).__module__
                return module.startswith("stable_explore.") and not module.startswith("stable_explore.compat")
        frame = frame.f_back
    return False
