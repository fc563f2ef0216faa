"""Versions from versions: edits saved as a new version (``Draft``), and the difference of two versions (``Diff``)."""

from __future__ import annotations

from stable_explore.versioning.compare import Diff, compare
from stable_explore.versioning.edits import Draft, PendingEdits
from stable_explore.versioning.row_diff import RowDiff

__all__ = ["Diff", "Draft", "PendingEdits", "RowDiff", "compare"]
